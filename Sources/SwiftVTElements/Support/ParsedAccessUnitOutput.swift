import CGStreamer
import CSwiftVTShim

/// What SwiftVT's Annex B parsers (h264parse-to-avcc, h265parse-to-hvcc) write: access units as
/// length-prefixed NAL units.
extension OwnedBuffer {
    /// A new buffer holding `nalUnits` (ranges of `data`, without start codes) each behind a
    /// 4-byte big-endian length (ISO/IEC 14496-15 5.3.2 / 8.3.2, lengthSizeMinusOne 3); nil when
    /// no buffer can be allocated.
    init?(lengthPrefixing nalUnits: [Range<Int>], of data: UnsafeRawBufferPointer) {
        self.init(lengthPrefixingRanges: nalUnits, of: data)
    }

    /// `init?(lengthPrefixing:of:)` for any collection of ranges (read twice: sizes, then bytes),
    /// so that a lazy filter and map of an access unit's NAL units need no array of their own.
    init?<Ranges: Collection<Range<Int>>>(lengthPrefixingRanges nalUnits: Ranges, of data: UnsafeRawBufferPointer) {
        let size = nalUnits.reduce(0) { $0 + 4 + $1.count }
        guard let buffer = OwnedBuffer(allocating: size) else { return nil }
        _ = buffer.withWritableBytes { destination in
            var offset = 0
            for range in nalUnits {
                destination.storeBytes(
                    of: UInt32(truncatingIfNeeded: range.count).bigEndian, toByteOffset: offset, as: UInt32.self)
                // Copy: start codes (3 or 4 bytes) become 4-byte lengths, dropped NAL units
                // (parameter sets in codec_data, damaged ones) leave holes, and the input memory
                // is shared with the base class's adapter, so the access unit cannot be rewritten
                // where it lies.
                UnsafeMutableRawBufferPointer(rebasing: destination[(offset + 4)...])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: data[range]))
                offset += 4 + range.count
            }
        }
        self = buffer
    }
}
