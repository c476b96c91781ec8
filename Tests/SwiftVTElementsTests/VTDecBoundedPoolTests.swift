import CGStreamer
import Glibc
import SwiftVTTestSupport
import Synchronization
import Testing

/// vtdec's pictures come from bounded pools: a paused downstream that takes every picture into a
/// queue makes the decoder wait once the bound is reached, and a flush or a state change ends
/// that wait although downstream gives nothing back; a playing downstream that keeps every
/// picture (an application holding them) makes the pools grow instead of stalling (issue 32,
/// rows 1-2).
@Suite("vtdec: bounded picture pools", .serialized)
struct VTDecBoundedPoolTests {
    /// Keeps a reference to every buffer that reaches the probed pad, as an application holding
    /// decoded pictures would; `releaseAll()` lets them go.
    final class Keeper: Sendable {
        // Buffer addresses (each holding one reference taken in the probe), not pointers:
        // pointers are not Sendable, and the addresses are only turned back to unref them.
        private let kept = Mutex<[UInt]>([])

        var count: Int { kept.withLock { $0.count } }

        func keep(_ buffer: UnsafeMutablePointer<GstBuffer>) {
            let reference = gst_mini_object_ref(
                UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstMiniObject.self))
            kept.withLock { $0.append(UInt(bitPattern: reference)) }
        }

        func releaseAll() {
            let all = kept.withLock { kept in
                defer { kept.removeAll() }
                return kept
            }
            for address in all {
                if let object = UnsafeMutablePointer<GstMiniObject>(bitPattern: address) {
                    gst_mini_object_unref(object)
                }
            }
        }
    }

    /// Runs `body` on its own thread; true if it returned within `seconds`.
    static func finishes(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> (Bool, pthread_t) {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            let done = Atomic<Bool>(false)
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let box = Box(body)
        var thread = pthread_t()
        pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
                box.body()
                box.done.store(true, ordering: .releasing)
                return nil
            }, Unmanaged.passRetained(box).toOpaque())
        let deadline = monotonicSeconds() + seconds
        while monotonicSeconds() < deadline {
            if box.done.load(ordering: .acquiring) { return (true, thread) }
            usleep(10_000)
        }
        return (box.done.load(ordering: .acquiring), thread)
    }

    /// Waits until the keeper's count has not changed for `quietSeconds` (the decoder waits) or
    /// `limit` seconds pass; returns the count.
    static func settledCount(_ keeper: Keeper, quietSeconds: Double = 1.0, limit: Double = 60) -> Int {
        let start = monotonicSeconds()
        var last = keeper.count
        var since = monotonicSeconds()
        while monotonicSeconds() - start < limit {
            usleep(50_000)
            let now = keeper.count
            if now != last {
                last = now
                since = monotonicSeconds()
            } else if monotonicSeconds() - since >= quietSeconds {
                break
            }
        }
        return last
    }

    enum Interruption: String, CaseIterable, Sendable {
        /// FLUSH_START and FLUSH_STOP sent to vtdec's sink pad, as a flushing seek does.
        case flush
        /// The pipeline set to NULL.
        case stateChangeToNull
    }

    /// A pipeline `filesrc ! h264parse ! vtdec ! TAIL` whose `probed` element's sink pad keeps
    /// every buffer; returns the pipeline, the keeper and vtdec's sink pad (owned by the caller).
    static func keepingPipeline(
        tail: String, probed: String
    ) throws -> (UnsafeMutablePointer<GstElement>, Keeper, UnsafeMutablePointer<GstPad>, Int) {
        let entry = try #require(Corpus.entry("VID_1920x1080_cabac_temporal_direct.264"))
        let path = try #require(Corpus.path(of: entry))
        #expect(GStreamerTesting.isReady)
        var parseError: UnsafeMutablePointer<GError>?
        let description = "filesrc location=\(path) ! h264parse ! vtdec name=dec hardware=disable ! \(tail)"
        let pipeline = try #require(gst_parse_launch(description, &parseError))
        if let parseError { g_error_free(parseError) }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        let keeper = Keeper()
        let probedElement = try #require(gst_bin_get_by_name(bin, probed))
        let probedPad = try #require(gst_element_get_static_pad(probedElement, "sink"))
        gst_pad_add_probe(
            probedPad, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, userData in
                guard let info, let userData, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
                Unmanaged<Keeper>.fromOpaque(userData).takeUnretainedValue().keep(
                    data.assumingMemoryBound(to: GstBuffer.self))
                return GST_PAD_PROBE_OK
            }, Unmanaged.passRetained(keeper).toOpaque(),
            { context in
                if let context { Unmanaged<Keeper>.fromOpaque(context).release() }
            })
        gst_object_unref(probedPad)
        gst_object_unref(probedElement)
        let decoder = try #require(gst_bin_get_by_name(bin, "dec"))
        let decoderSinkPad = try #require(gst_element_get_static_pad(decoder, "sink"))
        gst_object_unref(decoder)
        return (pipeline, keeper, decoderSinkPad, entry.frames)
    }

    @Test(
        "a playing downstream keeps every picture (zero-copy into fakevideosink, copies into fakesink): the pools grow and every frame arrives, as with avdec_h264",
        .requiresCorpus, arguments: ["fakevideosink name=sink sync=false", "fakesink name=sink sync=false"])
    func playingKeeperGetsEveryFrame(sink: String) throws {
        let (pipeline, keeper, decoderSinkPad, frames) = try Self.keepingPipeline(tail: sink, probed: "sink")
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            keeper.releaseAll()
            gst_object_unref(decoderSinkPad)
            gst_object_unref(pipeline)
        }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
        // Before the pools grew for a keeping consumer, this stopped at the bound (10-24).
        let kept = Self.settledCount(keeper, quietSeconds: 3)
        #expect(kept == frames, "\(kept) of \(frames) pictures reached a downstream that keeps them all")
    }

    @Test(
        "a paused downstream takes every picture into a queue: vtdec stops at its bound (zero-copy into fakevideosink, copies into fakesink), and a flush or the state change to NULL ends the wait",
        .requiresCorpus,
        arguments: ["fakevideosink name=sink sync=false", "fakesink name=sink sync=false"], Interruption.allCases)
    func waitEndsAtFlushAndStateChange(sink: String, interruption: Interruption) throws {
        // In PAUSED the sink prerolls one picture and the queue takes the rest: nobody consumes,
        // so the pools wait (no growth) instead of decoding the whole stream into the queue.
        let (pipeline, keeper, decoderSinkPad, frames) = try Self.keepingPipeline(
            tail: "queue name=hold max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! \(sink)", probed: "hold")
        defer {
            keeper.releaseAll()
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(decoderSinkPad)
            gst_object_unref(pipeline)
        }

        gst_element_set_state(pipeline, GST_STATE_PAUSED)
        let kept = Self.settledCount(keeper)
        // Bounded: the decoder waits with far fewer pictures out than the stream has. (Before
        // the pools had a bound, all 54 reached the sink.) The bound is the DPB (4 at level 4.0
        // for 1080p) plus the frame threads' pictures and the few in transit, or the copy
        // pool's maximum.
        #expect(kept > 0 && kept <= 24, "\(kept) of \(frames) pictures kept when the decoder stopped")

        let pipelineAddress = UInt(bitPattern: pipeline)
        let padAddress = UInt(bitPattern: decoderSinkPad)
        let (ended, thread) = Self.finishes(within: 10) {
            switch interruption {
            case .flush:
                guard let pad = UnsafeMutablePointer<GstPad>(bitPattern: padAddress) else { return }
                gst_pad_send_event(pad, gst_event_new_flush_start())
                // Takes the stream lock: returns only once handle_frame has stopped waiting.
                gst_pad_send_event(pad, gst_event_new_flush_stop(1))
            case .stateChangeToNull:
                guard let element = UnsafeMutablePointer<GstElement>(bitPattern: pipelineAddress) else { return }
                gst_element_set_state(element, GST_STATE_NULL)
            }
        }
        // Downstream still holds every picture: only the flush can have ended the wait.
        #expect(ended, "\(interruption.rawValue) did not return within 10 s while downstream kept \(kept) pictures")
        #expect(keeper.count == kept)
        if !ended { keeper.releaseAll() }
        pthread_join(thread, nil)
    }
}
