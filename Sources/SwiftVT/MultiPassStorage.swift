import Glibc
import MediaCore
import Synchronization

/// The coding type of a frame in the multi-pass analysis.
public enum AnalysisFrameType: UInt8, Sendable {
    case idr = 0
    case intra = 1
    case predicted = 2
    case bidirectional = 3
}

/// What one pass learned about one frame: the unit of ``MultiPassStorage``.
public struct FrameAnalysisRecord: Sendable, Equatable {
    public var presentationTimeStamp: MediaTime
    public var decodeTimeStamp: MediaTime
    public var duration: MediaTime
    public var frameType: AnalysisFrameType
    /// The frame's QP as encoded (may be fractional: x264 reports the average over macroblocks).
    public var quantizer: Double
    /// Coded size in bits.
    public var bits: Int
    /// bits x qscale(quantizer), filled by the encoder.
    public var complexity: Double
    /// The 1-based pass that produced the record.
    public var pass: Int

    public init(
        presentationTimeStamp: MediaTime, decodeTimeStamp: MediaTime, duration: MediaTime,
        frameType: AnalysisFrameType, quantizer: Double, bits: Int, complexity: Double, pass: Int
    ) {
        self.presentationTimeStamp = presentationTimeStamp
        self.decodeTimeStamp = decodeTimeStamp
        self.duration = duration
        self.frameType = frameType
        self.quantizer = quantizer
        self.bits = bits
        self.complexity = complexity
        self.pass = pass
    }
}

/// The encoder's per-frame analysis across passes, kept in a file: VideoToolbox's
/// `VTMultiPassStorage`.
///
/// File format (little-endian), `.swiftvt-mps-<pid>-<random>.db` in the directory given:
/// - a 64-byte header: magic `SVTMPSDB`, version, record size, flags (bit 0: closed with
///   `keepOnClose`), the time range, a CRC-32 of the header;
/// - fixed-size records (88 bytes: three times, frame type, pass, QP, bits, complexity, CRC-32),
///   appended by every ``write(_:)``. A later record with the same presentation time supersedes
///   an earlier one, on load as in memory, so replacing a frame never rewrites the file.
///
/// Reopening (``init(reopening:keepOnClose:)``) validates every checksum and field and throws
/// ``VTError/Code/corrupt`` naming the path and the record number. While open, the file is
/// locked with `flock` (see ``FrameSilo/removeStaleFiles(in:)``).
///
/// Thread-safe: the state is behind a `Mutex`; file writes happen under it (one writer at a time,
/// records land in the file in the order they are accepted). Nothing calls out under the lock.
public final class MultiPassStorage: Sendable {
    /// Where the records are.
    public let path: String
    /// The time range given at creation (``MediaTimeRange/invalid`` when not known).
    public let timeRange: MediaTimeRange
    private let state: Mutex<State>

    struct State {
        /// Nil once closed.
        var file: MultiPassFile?
        var keepOnClose: Bool
        /// One per presentation time (the latest written), sorted by presentation time.
        var records: [FrameAnalysisRecord]
        /// Records in the file, superseded ones included: the next one goes after them.
        var fileRecordCount: Int
    }

    static let magic: [UInt8] = Array("SVTMPSDB".utf8)
    static let version: UInt32 = 1
    static let headerSize = 64
    static let recordSize = 88
    static let keptFlag: UInt32 = 1

    /// Creates an empty storage file in `directory` for frames in `timeRange`.
    ///
    /// - Parameter keepOnClose: keep the file at ``close()`` (to reopen it later) instead of
    ///   removing it.
    /// - Throws: ``VTError/Code/ioFailed`` or ``VTError/Code/diskFull`` naming the file.
    public init(creatingIn directory: String, timeRange: MediaTimeRange, keepOnClose: Bool = false) throws(VTError) {
        let (file, _) = try MultiPassFile.createLocked(
            in: directory, prefix: StaleFiles.storagePrefix, suffix: StaleFiles.storageSuffix)
        do throws(VTError) {
            try file.write(Self.header(timeRange: timeRange, kept: false), at: 0)
        } catch {
            unlink(file.path)
            throw error
        }
        path = file.path
        self.timeRange = timeRange
        state = Mutex(State(file: file, keepOnClose: keepOnClose, records: [], fileRecordCount: 0))
    }

    /// Opens a storage kept by an earlier ``close()`` (or left by a crashed process), validating
    /// every record.
    ///
    /// - Throws: ``VTError/Code/corrupt`` naming the path and, for a bad record, its
    ///   number; ``VTError/Code/ioFailed`` when the file cannot be opened or another
    ///   process has it open.
    public init(reopening path: String, keepOnClose: Bool = true) throws(VTError) {
        let file = try MultiPassFile.open(path, flags: O_RDWR)
        guard file.tryLock() else {
            throw VTError(.ioFailed, "could not open \(path): another process is using it", path: path)
        }
        let bytes = try file.readAll()
        let (timeRange, kept) = try Self.parseHeader(bytes, path: path)
        let body = bytes.count - Self.headerSize
        guard body % Self.recordSize == 0 else {
            throw VTError(
                .corrupt,
                "\(path) is corrupt: it ends inside record \(body / Self.recordSize + 1) (\(body % Self.recordSize) of "
                    + "\(Self.recordSize) bytes; the file was cut short)", path: path)
        }
        let count = body / Self.recordSize
        var latest: [MediaTime: FrameAnalysisRecord] = [:]
        latest.reserveCapacity(count)
        for index in 0..<count {
            let record = try Self.parseRecord(
                bytes, at: Self.headerSize + index * Self.recordSize, number: index + 1, path: path)
            latest[record.presentationTimeStamp] = record // last one wins
        }
        if kept {
            // Open again: a crash from now on leaves a stale file, not a kept one.
            try file.write(Self.header(timeRange: timeRange, kept: false), at: 0)
        }
        self.path = path
        self.timeRange = timeRange
        let records = latest.values.sorted { $0.presentationTimeStamp < $1.presentationTimeStamp }
        state = Mutex(State(file: file, keepOnClose: keepOnClose, records: records, fileRecordCount: count))
    }

    deinit { try? close() }

    /// Appends `record`; it replaces a record with the same presentation time.
    ///
    /// - Throws: ``VTError/Code/invalidArgument`` for a presentation time that is not a
    ///   number or a pass below 1; ``VTError/Code/diskFull`` / ``VTError/Code/ioFailed``
    ///   when the write fails (the storage is unchanged and stays usable);
    ///   ``VTError/Code/closed`` after ``close()``.
    public func write(_ record: FrameAnalysisRecord) throws(VTError) {
        guard record.presentationTimeStamp.isNumeric else {
            throw VTError(
                .invalidArgument,
                "a frame analysis record needs a numeric presentation time, not \(record.presentationTimeStamp)")
        }
        guard record.pass >= 1, record.pass <= Int(UInt32.max) else {
            throw VTError(.invalidArgument, "pass \(record.pass) of a frame analysis record is not 1 or more")
        }
        let encoded = Self.encode(record)
        try state.withLock { (state) throws(VTError) in
            guard let file = state.file else { throw Self.closedError(path) }
            let offset = Self.headerSize + state.fileRecordCount * Self.recordSize
            do throws(VTError) {
                try file.write(encoded, at: offset)
            } catch {
                file.truncateBestEffort(to: offset)
                throw error
            }
            state.fileRecordCount += 1
            let index = Self.lowerBound(of: record.presentationTimeStamp, in: state.records)
            if index < state.records.count, state.records[index].presentationTimeStamp == record.presentationTimeStamp {
                state.records[index] = record
            } else {
                // Frames mostly arrive in presentation order or close to it (B-frames), so the
                // insertion point is at or near the end and the move is short.
                state.records.insert(record, at: index)
            }
        }
    }

    /// The record of the frame presented at `presentationTimeStamp`, if any.
    public func record(at presentationTimeStamp: MediaTime) -> FrameAnalysisRecord? {
        state.withLock { state in
            let index = Self.lowerBound(of: presentationTimeStamp, in: state.records)
            guard index < state.records.count, state.records[index].presentationTimeStamp == presentationTimeStamp
            else {
                return nil
            }
            return state.records[index]
        }
    }

    /// The records whose presentation time lies in `range` (all of them for nil), sorted by
    /// presentation time. Still answers after ``close()``.
    public func records(in range: MediaTimeRange? = nil) -> [FrameAnalysisRecord] {
        state.withLock { state in
            guard let range else { return state.records }
            var result: [FrameAnalysisRecord] = []
            var index = Self.lowerBound(of: range.start, in: state.records)
            while index < state.records.count, range.contains(state.records[index].presentationTimeStamp) {
                result.append(state.records[index])
                index += 1
            }
            return result
        }
    }

    /// Distinct frames stored (a replaced record counts once).
    public var recordCount: Int { state.withLock { $0.records.count } }

    /// Flushes the file to disk (`fsync`) and closes it; removes it unless `keepOnClose`. Later
    /// calls throw ``VTError/Code/closed``; the records stay readable.
    ///
    /// - Throws: the error of the final write, sync or removal (the storage is closed anyway).
    public func close() throws(VTError) {
        try state.withLock { (state) throws(VTError) in
            guard let file = state.file else { throw Self.closedError(path) }
            // Dropping the last reference closes the descriptor, which releases the lock.
            state.file = nil
            if state.keepOnClose {
                try file.write(Self.header(timeRange: timeRange, kept: true), at: 0)
                try file.sync()
            } else if unlink(file.path) != 0 {
                throw MultiPassFile.systemError(errno, "remove", file.path)
            }
        }
    }

    /// Same as ``FrameSilo/removeStaleFiles(in:)``: removes the silo and storage files in
    /// `directory` whose process died, and returns their paths.
    @discardableResult
    public static func removeStaleFiles(in directory: String) -> [String] { StaleFiles.remove(in: directory) }

    // MARK: Format

    private static func closedError(_ path: String) -> VTError {
        VTError(.closed, "the multi-pass storage \(path) is closed", path: path)
    }

    /// The first index whose presentation time is not below `time`.
    private static func lowerBound(of time: MediaTime, in records: [FrameAnalysisRecord]) -> Int {
        var low = 0
        var high = records.count
        while low < high {
            let middle = (low + high) / 2
            if records[middle].presentationTimeStamp < time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    static func header(timeRange: MediaTimeRange, kept: Bool) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize)
        writer.bytes += magic
        writer.append(version)
        writer.append(UInt32(recordSize))
        writer.append(kept ? keptFlag : 0)
        writer.append(UInt32(0))
        writer.append(timeRange)
        writer.appendZeros(headerSize - 4 - writer.bytes.count)
        writer.appendChecksum()
        return writer.bytes
    }

    /// The time range and the kept flag.
    static func parseHeader(_ bytes: [UInt8], path: String) throws(VTError) -> (MediaTimeRange, Bool) {
        guard bytes.count >= headerSize else {
            throw VTError(
                .corrupt,
                "\(path) is not a multi-pass storage: \(bytes.count) bytes, shorter than the \(headerSize)-byte header",
                path: path)
        }
        guard Array(bytes[0..<magic.count]) == magic else {
            throw VTError(.corrupt, "\(path) is not a multi-pass storage (wrong magic number)", path: path)
        }
        var reader = ByteReader(bytes, offset: magic.count, context: path)
        let version = try reader.read(UInt32.self)
        guard version == Self.version else {
            throw VTError(
                .corrupt,
                "\(path) is a multi-pass storage of version \(version); this SwiftVT reads version \(Self.version)",
                path: path)
        }
        let stored = UInt32(
            littleEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: headerSize - 4, as: UInt32.self) })
        guard CRC32.checksum(bytes, 0..<headerSize - 4) == stored else {
            throw VTError(.corrupt, "\(path) is corrupt: the header's checksum does not match", path: path)
        }
        let recordSize = try reader.read(UInt32.self)
        guard recordSize == Self.recordSize else {
            throw VTError(
                .corrupt, "\(path) is corrupt: records of \(recordSize) bytes, expected \(Self.recordSize)", path: path)
        }
        let flags = try reader.read(UInt32.self)
        try reader.skip(4)
        let timeRange = try reader.readRange("time range")
        return (timeRange, flags & keptFlag != 0)
    }

    static func encode(_ record: FrameAnalysisRecord) -> [UInt8] {
        var writer = ByteWriter(capacity: recordSize)
        writer.append(record.presentationTimeStamp)
        writer.append(record.decodeTimeStamp)
        writer.append(record.duration)
        writer.append(record.frameType.rawValue)
        writer.appendZeros(3)
        writer.append(UInt32(truncatingIfNeeded: record.pass))
        writer.append(record.quantizer)
        writer.append(Int64(record.bits))
        writer.append(record.complexity)
        writer.append(UInt32(0))
        writer.appendChecksum()
        return writer.bytes
    }

    private static func parseRecord(
        _ bytes: [UInt8], at offset: Int, number: Int, path: String
    ) throws(VTError) -> FrameAnalysisRecord {
        let context = "\(path) record \(number) (offset \(offset))"
        let stored = UInt32(
            littleEndian: bytes.withUnsafeBytes {
                $0.loadUnaligned(fromByteOffset: offset + recordSize - 4, as: UInt32.self)
            })
        guard CRC32.checksum(bytes, offset..<offset + recordSize - 4) == stored else {
            throw VTError(
                .corrupt, "\(path) is corrupt: record \(number) (offset \(offset)) fails its checksum", path: path)
        }
        do throws(VTError) {
            var reader = ByteReader(bytes, offset: offset, context: context)
            let presentationTimeStamp = try reader.readTime("presentation time")
            let decodeTimeStamp = try reader.readTime("decode time")
            let duration = try reader.readTime("duration")
            let rawType = try reader.read(UInt8.self)
            try reader.skip(3)
            let pass = Int(try reader.read(UInt32.self))
            let quantizer = try reader.readDouble()
            let bits = Int(try reader.read(Int64.self))
            let complexity = try reader.readDouble()
            guard let frameType = AnalysisFrameType(rawValue: rawType) else {
                throw VTError(.corrupt, "\(context) is corrupt: frame type \(rawType) is unknown")
            }
            guard presentationTimeStamp.isNumeric, pass >= 1 else {
                throw VTError(
                    .corrupt, "\(context) is corrupt: presentation time \(presentationTimeStamp), pass \(pass)")
            }
            return FrameAnalysisRecord(
                presentationTimeStamp: presentationTimeStamp, decodeTimeStamp: decodeTimeStamp, duration: duration,
                frameType: frameType, quantizer: quantizer, bits: bits, complexity: complexity, pass: pass)
        } catch {
            var error = error
            error.path = path
            throw error
        }
    }

    /// Whether `file` is a storage closed with `keepOnClose` (for the stale-file sweep).
    static func isKept(_ file: MultiPassFile) -> Bool {
        var header = [UInt8](repeating: 0, count: headerSize)
        let read = try? header.withMutableRawBytes { (buffer) throws(VTError) in try file.read(into: buffer, at: 0) }
        guard let read, read == headerSize, let (_, kept) = try? parseHeader(header, path: file.path)
        else { return false }
        return kept
    }
}
