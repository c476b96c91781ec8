#if SWIFTVT_TEST_BUILD_ELEMENTS
    import CGStreamer
    import Synchronization

    /// `swiftvt-frame-counter`: a throwaway sink that counts the buffers it receives, built into
    /// test builds only (SWIFTVT_TEST_BUILD_ELEMENTS, set for debug builds in Package.swift). It shows
    /// what adding an element takes (docs/architecture.md, "How to add an element"): this folder, one
    /// row in Elements.swift, and its interface snapshot (docs/gst-inspect/test-build/).
    final class FrameCounter: BaseSinkSubclass, @unchecked Sendable {
        // `sink` is the GObject that owns this object; the count is atomic.
        let sink: UnsafeMutablePointer<GstBaseSink>
        static let debugCategory = DebugCategory(
            named: "swiftvt-frame-counter", description: "SwiftVT example element: counts buffers")
        private let frames = Atomic<UInt64>(0)

        init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
            sink = instance.assumingMemoryBound(to: GstBaseSink.self)
            // Counting needs no clock.
            gst_base_sink_set_sync(sink, 0)
        }

        static func interface(for context: ElementClassContext) -> ElementInterface<FrameCounter> {
            ElementInterface(
                longName: "SwiftVT frame counter (example)", classification: "Sink",
                description:
                    "Counts the buffers it receives: the example element of docs/architecture.md, in test builds only",
                padTemplates: [.sink("ANY")],
                properties: [
                    .reported(
                        "frames", nick: "Frames", blurb: "Buffers received since the element started",
                        .uint64(0...UInt64.max, default: 0)
                    ) { .uint64($0.frames.load(ordering: .relaxed)) }
                ])
        }

        func start() -> Bool {
            frames.store(0, ordering: .relaxed)
            return true
        }

        func render(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn {
            frames.add(1, ordering: .relaxed)
            return GST_FLOW_OK
        }
    }
#endif
