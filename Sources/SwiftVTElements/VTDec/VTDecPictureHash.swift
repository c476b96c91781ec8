import CGStreamer
import CSwiftVTShim
import H265
import MediaCore
import SwiftVT
import Synchronization

/// verify-picture-hash: what vtdec knows of the H.265 pictures in flight. Every sample is read
/// for its decoded picture hash SEI in decoding order (``H265PictureHashReader``); each picture
/// the session outputs is checked against its entry (``H265PictureHashCheck``), and the first
/// picture that differs is named in one WARNING. Streaming thread only, like the sample builder.
struct PictureHashBook {
    struct Entry {
        /// The picture's number in decoding order (the frame's system_frame_number).
        var pictureNumber: UInt32
        var pictureOrderCount: Int
        var expected: H265ExpectedPictureHash?
    }

    private var reader = H265PictureHashReader()
    private var learned: FormatDescription?
    private var entries = PerPictureValues<Entry>()
    private(set) var sawHash = false
    var reportedMismatch = false
    var reportedMissingHash = false
    var reportedUncheckable = false

    /// Reads one sample (4-byte length-prefixed access unit) of the frame `frameNumber`.
    mutating func note(frameNumber: UInt32, sample: UnsafeRawBufferPointer, description: FormatDescription) {
        if learned != description {
            // The hvcC record's parameter sets, which an hvc1 stream does not repeat in band.
            reader.learn(parameterSets: description.parameterSets)
            learned = description
        }
        guard let read = reader.read(sample: sample) else { return }
        if read.expected != nil { sawHash = true }
        entries.set(
            Entry(pictureNumber: frameNumber, pictureOrderCount: read.pictureOrderCount, expected: read.expected),
            for: frameNumber)
    }

    mutating func take(frameNumber: UInt32) -> Entry? { entries.take(frameNumber) }
}

extension VTDec {
    /// Before a sample goes to the session: its picture's hash, when verify-picture-hash is on
    /// for an H.265 stream.
    func notePictureHash(frameNumber: UInt32, sample: UnsafeRawBufferPointer, description: FormatDescription) {
        let isH265 = description.codecType.isHEVC
        guard isH265, settings.withLock({ $0.verifyPictureHash }) else { return }
        pictureHashes.withLock { $0.note(frameNumber: frameNumber, sample: sample, description: description) }
    }

    /// A picture the session output: checked against its hash (outside the lock: the check reads
    /// the whole picture), and the first difference, a stream without hashes, or pictures that
    /// cannot be checked said once each.
    func verifyPictureHash(of image: PixelBuffer, frameNumber: UInt32, presentationTimeStamp: MediaTime) {
        guard let entry = pictureHashes.withLock({ $0.take(frameNumber: frameNumber) }) else { return }
        guard let expected = entry.expected else {
            let first = pictureHashes.withLock { book -> Bool in
                defer { book.reportedMissingHash = true }
                return !book.sawHash && !book.reportedMissingHash
            }
            if first {
                ElementMessage.stream(
                    GST_STREAM_ERROR_FORMAT,
                    "verify-picture-hash is on, but picture \(entry.pictureNumber) (POC \(entry.pictureOrderCount)) carries "
                        + "no decoded picture hash SEI (H.265 D.2.20): pictures without one cannot be verified. Encode with "
                        + "hashes (x265 --hash 1) to check the decoder's output."
                )
                .post(from: object, isError: false)
            }
            return
        }
        let outcome = H265PictureHashCheck.check(image, against: expected)
        switch outcome {
        case .matches:
            return
        case .notCheckable(let why):
            let first = pictureHashes.withLock { book -> Bool in
                defer { book.reportedUncheckable = true }
                return !book.reportedUncheckable
            }
            if first {
                log.warning(object, "verify-picture-hash: picture \(entry.pictureNumber) cannot be checked: \(why)")
            }
        case .differs(let components):
            let first = pictureHashes.withLock { book -> Bool in
                defer { book.reportedMismatch = true }
                return !book.reportedMismatch
            }
            guard first else {
                log.warning(
                    object,
                    "verify-picture-hash: picture \(entry.pictureNumber) (POC \(entry.pictureOrderCount)) differs too")
                return
            }
            let names = components.map { ["Y", "Cb", "Cr"][min($0, 2)] }.joined(separator: ", ")
            let kind: String
            switch expected.hash {
            case .md5: kind = "MD5"
            case .crc: kind = "CRC"
            case .checksum: kind = "checksum"
            }
            let time = presentationTimeStamp.isValid ? "\(presentationTimeStamp.gstreamerNanoseconds) ns" : "none"
            ElementMessage.stream(
                GST_STREAM_ERROR_DECODE,
                "verify-picture-hash: picture \(entry.pictureNumber) in decoding order (POC \(entry.pictureOrderCount), "
                    + "PTS \(time)) differs from its decoded picture hash SEI (\(kind) of \(names), H.265 D.3.19): the decoded "
                    + "picture is not what the encoder made. Later differences go to the debug log only.",
                debug: "picture \(entry.pictureNumber), POC \(entry.pictureOrderCount), components \(components)"
            )
            .post(from: object, isError: false)
        }
    }
}
