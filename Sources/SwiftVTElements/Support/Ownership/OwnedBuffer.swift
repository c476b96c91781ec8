import CGStreamer
import CSwiftVTShim

/// One GstBuffer reference, owned by whoever holds this value: it is handed on exactly once (to
/// a frame, a push, a call that takes it) or given back when the value goes.
struct OwnedBuffer: ~Copyable, @unchecked Sendable {
    // Owned, never shared: GstMiniObject reference counts are atomic, and only the holder of
    // this value uses the pointer, so the value may move between threads (out of a lock).
    let pointer: UnsafeMutablePointer<GstBuffer>

    /// Takes a reference the caller owns.
    init(adopting pointer: UnsafeMutablePointer<GstBuffer>) {
        self.pointer = pointer
    }

    /// A new buffer of `size` bytes from the default allocator; nil when none can be made.
    init?(allocating size: Int) {
        guard let pointer = gst_buffer_new_allocate(nil, gsize(size), nil) else { return nil }
        self.pointer = pointer
    }

    deinit {
        gst_buffer_unref(pointer)
    }

    /// Hands the reference to a call that takes it (transfer full): the frame's output buffer,
    /// GstBaseParseFrame's out_buffer.
    consuming func take() -> UnsafeMutablePointer<GstBuffer> {
        let pointer = self.pointer
        discard self
        return pointer
    }

    /// `body` with the buffer lent to a call that takes a reference of its own (transfer none):
    /// this reference lasts at least until `body` returns.
    func withBorrowedPointer<Result>(_ body: (UnsafeMutablePointer<GstBuffer>) -> Result) -> Result {
        body(pointer)
    }

    /// The bytes the buffer holds (gst_buffer_get_size).
    var size: Int { Int(gst_buffer_get_size(pointer)) }

    // MARK: Time stamps and flags (GST_BUFFER_* macros)

    var presentationTimeStamp: GstClockTime {
        get { pointer.pointee.pts }
        nonmutating set { pointer.pointee.pts = newValue }
    }

    var decodeTimeStamp: GstClockTime {
        get { pointer.pointee.dts }
        nonmutating set { pointer.pointee.dts = newValue }
    }

    var duration: GstClockTime {
        get { pointer.pointee.duration }
        nonmutating set { pointer.pointee.duration = newValue }
    }

    /// GST_BUFFER_FLAG_DELTA_UNIT, set for everything but sync points.
    func setDeltaUnit(_ isDeltaUnit: Bool) {
        if isDeltaUnit {
            swiftvt_buffer_set_flags(pointer, GST_BUFFER_FLAG_DELTA_UNIT)
        } else {
            swiftvt_buffer_unset_flags(pointer, GST_BUFFER_FLAG_DELTA_UNIT)
        }
    }

    /// `body` with the buffer's bytes mapped for writing (a buffer just allocated is writable);
    /// nil when it cannot be mapped.
    func withWritableBytes<Result: ~Copyable, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        try MappedBytes.withWritableBytes(of: pointer, body)
    }
}

/// Owned GstBuffer references in order (the access units h264parse-to-avcc holds back, then
/// pushes): each is handed on once by ``forEach(_:)``, and what is left when the list goes is
/// given back.
struct OwnedBufferList: ~Copyable, @unchecked Sendable {
    // Owns one reference per entry, like OwnedBuffer (an Array cannot hold ~Copyable values).
    // The first entry is kept apart from the others: most lists (the access units released by
    // one access unit) hold exactly one, and then need no array storage (an allocation per
    // access unit).
    private typealias Entry = (pointer: UnsafeMutablePointer<GstBuffer>, inputByteCount: Int)
    private var first: Entry?
    /// The entries after `first` (empty while `first` is nil).
    private var rest: [Entry] = []

    init() {}

    deinit {
        if let first { gst_buffer_unref(first.pointer) }
        for entry in rest { gst_buffer_unref(entry.pointer) }
    }

    var isEmpty: Bool { first == nil }

    private mutating func append(_ entry: Entry) {
        if first == nil { first = entry } else { rest.append(entry) }
    }

    /// Appends `buffer` with the input bytes it stands for (see ``HeldAccessUnit``).
    mutating func append(_ buffer: consuming OwnedBuffer, inputByteCount: Int = 0) {
        append((buffer.take(), inputByteCount))
    }

    mutating func append(contentsOf other: consuming OwnedBufferList) {
        if let entry = other.first { append(entry) }
        for entry in other.rest { append(entry) }
        other.first = nil
        other.rest = []
    }

    /// Hands each buffer, in order, to `body`, which owns it from then on.
    consuming func forEach(_ body: (consuming OwnedBuffer, _ inputByteCount: Int) -> Void) {
        let takenFirst = first
        let taken = rest
        first = nil
        rest = []
        if let takenFirst { body(OwnedBuffer(adopting: takenFirst.pointer), takenFirst.inputByteCount) }
        for entry in taken { body(OwnedBuffer(adopting: entry.pointer), entry.inputByteCount) }
    }
}
