import Glibc
import MediaCore

// The frame silo's index file: its binary format (header, ranges, format descriptions, records,
// CRC-32), version checks and validation on reading, the atomic write, and the packed form of
// the sample attachments the records carry. The silo itself (FrameSilo.swift) keeps the index in
// memory and calls these to save and load it.

extension FrameSilo {
    static let indexMagic: [UInt8] = Array("SVTSILOI".utf8)
    /// 2: the frames each range took out are kept (``RecordKind/takenOutSample``).
    static let indexVersion: UInt32 = 2
    static let indexKeptFlag: UInt32 = 1
    static let indexHeaderSize = 128
    static let indexRecordSize = 72

    /// Bit 0 notSync; bits 1-2 dependsOnOthers and 3-4 isDependedOnByOthers (0 unknown, 1 false,
    /// 2 true); bit 5 earlierDisplayTimesAllowed; 6 doNotDisplay; 7 displayImmediately.
    static func packAttachments(_ attachments: SampleAttachments) -> UInt8 {
        func tristate(_ value: Bool?) -> UInt8 { value.map { $0 ? 2 : 1 } ?? 0 }
        return (attachments.notSync ? 1 : 0) | tristate(attachments.dependsOnOthers) << 1
            | tristate(attachments.isDependedOnByOthers) << 3 | (attachments.earlierDisplayTimesAllowed ? 1 << 5 : 0)
            | (attachments.doNotDisplay ? 1 << 6 : 0) | (attachments.displayImmediately ? 1 << 7 : 0)
    }

    static func unpackAttachments(_ packed: UInt8) -> SampleAttachments {
        func tristate(_ bits: UInt8) -> Bool? { bits == 0 ? nil : bits == 2 }
        return SampleAttachments(
            notSync: packed & 1 != 0, dependsOnOthers: tristate(packed >> 1 & 3),
            isDependedOnByOthers: tristate(packed >> 3 & 3), earlierDisplayTimesAllowed: packed & 1 << 5 != 0,
            doNotDisplay: packed & 1 << 6 != 0, displayImmediately: packed & 1 << 7 != 0)
    }

    enum RecordKind: UInt8 {
        /// A sample kept from an earlier pass (or added in pass 1).
        case sample = 0
        /// The place of range `slot`'s replacements.
        case slot = 1
        /// A replacement added in the current pass, following its slot's record.
        case slotSample = 2
        /// A sample range `slot` took out, following its slot's record (before the replacements).
        case takenOutSample = 3
    }

    /// The index (little-endian):
    /// - header (128 bytes): magic `SVTSILOI`, version, flags (bit 0: closed with
    ///   `keepOnClose`), the index's length, the end of the data written, the time range, the
    ///   pass, samples expected and added in it, the duration added in pass 1 and whether all durations
    ///   were known, the counts of ranges, descriptions and records;
    /// - the ranges (32 bytes each), the format descriptions (each a length and its fields, see
    ///   ``ByteWriter/append(_:)-(FormatDescription)``), the records (72 bytes each: kind,
    ///   attachments, description id, offset, size, slot, three times), in read-out order;
    /// - a CRC-32 of everything before it.
    static func serializeIndex(_ state: State, timeRange: MediaTimeRange, kept: Bool) -> [UInt8] {
        var recordCount = 0
        for item in state.items {
            if case .slot(let range) = item {
                recordCount += state.slotSamples[range].count + state.takenOutSamples[range].count
            }
            recordCount += 1
        }
        var writer = ByteWriter(capacity: indexHeaderSize + recordCount * indexRecordSize + 4096)
        writer.bytes += indexMagic
        writer.append(indexVersion)
        writer.append(kept ? indexKeptFlag : 0)
        let lengthOffset = writer.bytes.count
        writer.append(UInt64(0)) // the length, filled in below
        writer.append(UInt64(state.dataEnd))
        writer.append(timeRange)
        writer.append(UInt32(truncatingIfNeeded: state.pass))
        writer.append(UInt32(0))
        writer.append(UInt64(state.expectedInPass))
        writer.append(UInt64(state.addedInPass))
        writer.append(state.durationAddedInFirstPass)
        writer.append(UInt32(state.allDurationsKnown ? 1 : 0))
        writer.append(UInt32(state.ranges.count))
        writer.append(UInt32(state.descriptions.count))
        writer.append(UInt32(0))
        writer.append(UInt64(recordCount))
        assert(writer.bytes.count == indexHeaderSize)
        for range in state.ranges { writer.append(range) }
        for description in state.descriptions {
            var fields = ByteWriter()
            fields.append(description)
            writer.appendBlob(fields.bytes)
        }
        func append(_ kind: RecordKind, _ entry: Entry?, slot: Int = 0) {
            writer.append(kind.rawValue)
            writer.append(entry?.attachments ?? 0)
            writer.append(UInt16(0))
            writer.append(entry?.descriptionID ?? -1)
            writer.append(UInt64(entry?.offset ?? 0))
            writer.append(UInt32(entry?.size ?? 0))
            writer.append(UInt32(slot))
            writer.append(entry?.presentationTimeStamp ?? .invalid)
            writer.append(entry?.decodeTimeStamp ?? .invalid)
            writer.append(entry?.duration ?? .invalid)
        }
        for item in state.items {
            switch item {
            case .sample(let entry):
                append(.sample, entry)
            case .slot(let range):
                append(.slot, nil, slot: range)
                for entry in state.takenOutSamples[range] { append(.takenOutSample, entry, slot: range) }
                for entry in state.slotSamples[range] { append(.slotSample, entry, slot: range) }
            }
        }
        let length = UInt64(writer.bytes.count + 4)
        withUnsafeBytes(of: length.littleEndian) { length in
            writer.bytes.replaceSubrange(lengthOffset..<lengthOffset + 8, with: length)
        }
        writer.appendChecksum()
        return writer.bytes
    }

    /// Validates and loads an index; every sample must lie within the first `dataFileSize` bytes
    /// of the data file.
    static func parseIndex(
        _ bytes: [UInt8], path: String, dataFile: MultiPassFile, dataFileSize: Int, keepOnClose: Bool
    ) throws(VTError) -> (State, MediaTimeRange, kept: Bool) {
        func corrupt(_ problem: String) -> VTError {
            VTError(.corrupt, "\(path) is corrupt: \(problem)", path: path)
        }
        guard bytes.count >= indexMagic.count, Array(bytes[0..<indexMagic.count]) == indexMagic else {
            throw VTError(.corrupt, "\(path) is not a frame silo index (wrong magic number)", path: path)
        }
        var reader = ByteReader(bytes, offset: indexMagic.count, context: path)
        do throws(VTError) {
            let version = try reader.read(UInt32.self)
            guard version == indexVersion else {
                throw VTError(
                    .corrupt,
                    "\(path) is a frame silo index of version \(version); this SwiftVT reads version \(indexVersion)")
            }
            let flags = try reader.read(UInt32.self)
            let length = try reader.read(UInt64.self)
            guard length == UInt64(bytes.count), bytes.count >= indexHeaderSize + 4 else {
                throw corrupt("it is \(bytes.count) bytes long but says \(length) (the file was cut short or extended)")
            }
            let stored = UInt32(
                littleEndian: bytes.withUnsafeBytes {
                    $0.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self)
                })
            let computed = CRC32.checksum(bytes, 0..<bytes.count - 4)
            guard stored == computed else {
                throw corrupt("the checksum does not match (stored \(stored), computed \(computed))")
            }
            var state = State(dataFile: dataFile, keepOnClose: keepOnClose)
            let dataEnd = try reader.read(UInt64.self)
            guard dataEnd <= UInt64(dataFileSize) else {
                throw corrupt("it covers \(dataEnd) bytes of data but \(dataFile.path) holds \(dataFileSize)")
            }
            state.dataEnd = Int(dataEnd)
            let timeRange = try reader.readRange("time range")
            state.pass = Int(try reader.read(UInt32.self))
            try reader.skip(4)
            state.expectedInPass = Int(clamping: try reader.read(UInt64.self))
            state.addedInPass = Int(clamping: try reader.read(UInt64.self))
            state.durationAddedInFirstPass = try reader.readTime("duration added in pass 1")
            state.allDurationsKnown = try reader.read(UInt32.self) != 0
            let rangeCount = Int(try reader.read(UInt32.self))
            let descriptionCount = Int(try reader.read(UInt32.self))
            try reader.skip(4)
            let recordCount = try reader.read(UInt64.self)
            guard state.pass >= 1, state.pass > 1 || rangeCount == 0 else {
                throw corrupt("pass \(state.pass) with \(rangeCount) ranges")
            }
            guard rangeCount <= reader.remaining / 32 else {
                throw corrupt("\(rangeCount) ranges do not fit in the file")
            }
            for index in 0..<rangeCount {
                let range = try reader.readRange("range \(index)")
                guard range.isValid, range.start.isNumeric, range.duration.isNumeric,
                    index == 0 || state.ranges[index - 1].end <= range.start
                else { throw corrupt("range \(index) \(range) is invalid or out of order") }
                state.ranges.append(range)
            }
            guard descriptionCount <= reader.remaining / 4 else {
                throw corrupt("\(descriptionCount) format descriptions do not fit in the file")
            }
            for index in 0..<descriptionCount {
                let blob = try reader.readBlob("format description \(index)")
                var fields = ByteReader(blob, context: "\(path) format description \(index)")
                let description = try fields.readFormatDescription()
                state.descriptionIDs[description] = Int32(truncatingIfNeeded: index)
                state.descriptions.append(description)
            }
            guard recordCount == UInt64((reader.remaining - 4) / indexRecordSize),
                (reader.remaining - 4) % indexRecordSize == 0
            else {
                throw corrupt("\(recordCount) records do not match the \(reader.remaining - 4) bytes left for them")
            }
            state.slotSamples = Array(repeating: [], count: rangeCount)
            state.takenOutSamples = Array(repeating: [], count: rangeCount)
            var placed = [Bool](repeating: false, count: rangeCount)
            var currentSlot: Int?
            for index in 0..<Int(recordCount) {
                let number = index + 1
                let offset = reader.offset
                func bad(_ problem: String) -> VTError { corrupt("record \(number) (offset \(offset)) \(problem)") }
                let rawKind = try reader.read(UInt8.self)
                let attachments = try reader.read(UInt8.self)
                try reader.skip(2)
                let descriptionID = try reader.read(Int32.self)
                let dataOffset = try reader.read(UInt64.self)
                let size = try reader.read(UInt32.self)
                let slot = Int(try reader.read(UInt32.self))
                let presentationTimeStamp = try reader.readTime("record \(number) presentation time")
                let decodeTimeStamp = try reader.readTime("record \(number) decode time")
                let duration = try reader.readTime("record \(number) duration")
                guard let kind = RecordKind(rawValue: rawKind) else { throw bad("has unknown kind \(rawKind)") }
                if kind == .slot {
                    guard slot < rangeCount, !placed[slot] else {
                        throw bad("names range \(slot) of \(rangeCount) twice or out of bounds")
                    }
                    placed[slot] = true
                    currentSlot = slot
                    state.items.append(.slot(slot))
                    continue
                }
                guard presentationTimeStamp.isNumeric else {
                    throw bad("has presentation time \(presentationTimeStamp)")
                }
                guard descriptionID >= -1, Int(descriptionID) < descriptionCount else {
                    throw bad("names format description \(descriptionID) of \(descriptionCount)")
                }
                guard attachments >> 1 & 3 != 3, attachments >> 3 & 3 != 3 else { throw bad("has bad attachment bits") }
                guard dataOffset <= dataEnd, UInt64(size) <= dataEnd - dataOffset else {
                    throw bad(
                        "has \(size) bytes at offset \(dataOffset), beyond the \(dataEnd) bytes of \(dataFile.path)")
                }
                let entry = Entry(
                    offset: Int(dataOffset), size: Int(size), presentationTimeStamp: presentationTimeStamp,
                    decodeTimeStamp: decodeTimeStamp, duration: duration, attachments: attachments,
                    descriptionID: descriptionID)
                if kind == .takenOutSample {
                    guard let currentSlot, slot == currentSlot, state.slotSamples[slot].isEmpty,
                        state.ranges[slot].contains(presentationTimeStamp)
                    else { throw bad("is a frame taken out by range \(slot) outside that range's place") }
                    state.takenOutSamples[slot].append(entry)
                    continue
                }
                if kind == .slotSample {
                    guard let currentSlot, slot == currentSlot, state.ranges[slot].contains(presentationTimeStamp)
                    else {
                        throw bad("is a replacement for range \(slot) outside that range's place")
                    }
                    state.slotSamples[slot].append(entry)
                } else {
                    currentSlot = nil
                    state.items.append(.sample(entry))
                }
                state.sampleCount += 1
                state.totalBytes += Int(size)
            }
            guard !placed.contains(false) else {
                throw corrupt("a range of pass \(state.pass) has no place in the order")
            }
            return (state, timeRange, flags & indexKeptFlag != 0)
        } catch {
            var error = error
            error.path = path
            throw error
        }
    }

    /// Writes `bytes` to `path` atomically: a `.tmp` file, `fsync`, `rename`, then `fsync` of the
    /// directory so the rename itself survives a crash.
    static func writeIndex(_ bytes: [UInt8], to path: String) throws(VTError) {
        let temporary = path + StaleFiles.temporarySuffix
        do throws(VTError) {
            let file = try MultiPassFile.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC, operation: "create")
            try file.write(bytes, at: 0)
            try file.sync()
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw MultiPassFile.systemError(code, "rename \(temporary) to", path)
        }
        if let directory = try? MultiPassFile.open(parentDirectory(of: path), flags: O_RDONLY | O_DIRECTORY) {
            _ = fsync(directory.descriptor) // best effort: some file systems refuse fsync on a directory
        }
    }

    /// Whether the index at `path` says its silo was closed with `keepOnClose` (for the
    /// stale-file sweep, which must not remove kept silos).
    static func indexIsKept(at path: String) -> Bool {
        guard let file = try? MultiPassFile.open(path, flags: O_RDONLY | O_NOFOLLOW) else { return false }
        var header = [UInt8](repeating: 0, count: 16)
        let read = try? header.withMutableRawBytes { (buffer) throws(VTError) in try file.read(into: buffer, at: 0) }
        guard let read, read == header.count, Array(header[0..<indexMagic.count]) == indexMagic
        else { return false }
        var reader = ByteReader(header, offset: indexMagic.count, context: path)
        guard (try? reader.read(UInt32.self)) == indexVersion, let flags = try? reader.read(UInt32.self) else {
            return false
        }
        return flags & indexKeptFlag != 0
    }
}
