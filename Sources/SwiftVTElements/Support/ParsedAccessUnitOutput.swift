import CGStreamer
import CSwiftVTShim

/// What SwiftVT's Annex B parsers (h264parse-to-avcc, h265parse-to-hvcc) share on the output
/// side: access units written as length-prefixed NAL units, and access units that were held for
/// their presentation position pushed through GstBaseParse.
extension OwnedBuffer {
    /// A new buffer holding `nalUnits` (ranges of `data`, without start codes) each behind a
    /// 4-byte big-endian length (ISO/IEC 14496-15 5.3.2 / 8.3.2, lengthSizeMinusOne 3); nil when
    /// no buffer can be allocated.
    init?(lengthPrefixing nalUnits: [Range<Int>], of data: UnsafeRawBufferPointer) {
        let size = nalUnits.reduce(0) { $0 + 4 + $1.count }
        guard let buffer = OwnedBuffer(allocating: size) else { return nil }
        _ = buffer.withWritableBytes { destination in
            var offset = 0
            for range in nalUnits {
                destination.storeBytes(of: UInt32(truncatingIfNeeded: range.count).bigEndian, toByteOffset: offset, as: UInt32.self)
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

extension BaseParseSubclass {
    /// Pushes timestamped access units that were held for reordering. Called with the sink
    /// pad's stream lock held (from handle_frame or a serialized event), as
    /// gst_base_parse_push_frame requires. After a failed push the rest are not sent (they go
    /// back with the list).
    func pushHeld(_ buffers: consuming OwnedBufferList) -> GstFlowReturn {
        var result = GST_FLOW_OK
        buffers.forEach { buffer, inputByteCount in
            guard result == GST_FLOW_OK, let frame = Self.parseFrame(holding: buffer) else { return }
            // The consumed size of the input, which finish_frame did not count (the frame was
            // finished as dropped while its access unit waited here): without it GstBaseParse's
            // byte count stays 0 and it refuses every seek that needs time converted to bytes.
            frame.pointee.size = gint(clamping: inputByteCount)
            result = gst_base_parse_push_frame(parse, frame)
            gst_base_parse_frame_free(frame)
        }
        return result
    }

    /// A frame for gst_base_parse_push_frame holding `buffer`: gst_base_parse_frame_new takes a
    /// reference of its own (transfer none), which push_frame hands downstream; `buffer`'s goes
    /// as this returns, so downstream holds the only one and may write the buffer in place.
    private static func parseFrame(holding buffer: consuming OwnedBuffer) -> UnsafeMutablePointer<GstBaseParseFrame>? {
        buffer.withBorrowedPointer { gst_base_parse_frame_new($0, GST_BASE_PARSE_FRAME_FLAG_NONE, 0) }
    }
}
