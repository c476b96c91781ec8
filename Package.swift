// swift-tools-version: 6.1
//
// SwiftVT: Apple's VideoToolbox model of direct codec access, as GStreamer elements on Linux.
// Layers (bottom to top): MediaCore (time, formats, buffers) -> H264 (bitstream) -> sessions ->
// backends -> elements. See README.md.
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("MemberImportVisibility")
]

// Swift's run-time exclusivity checks stay on: bench/exclusivity.sh builds the plugin with and
// without them (SWIFTVT_UNCHECKED_EXCLUSIVITY=1 adds -enforce-exclusivity=unchecked to every Swift
// target) and times parsing, decoding and encoding; turning them off did not pay (docs/architecture.md
// has the figures), and it would turn a broken one-thread-at-a-time promise into silent memory
// corruption. No unsafe flags in the library targets either: they would stop MediaCore, H264,
// SwiftVT... from being dependencies of other packages.
let optimized: [SwiftSetting] =
    strictSwift
    + (Context.environment["SWIFTVT_UNCHECKED_EXCLUSIVITY"] == "1"
        ? [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))] : [])

let package = Package(
    name: "SwiftVT",
    products: [
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "NALBitstream", targets: ["NALBitstream"]),
        .library(name: "H264", targets: ["H264"]),
        .library(name: "H265", targets: ["H265"]),
        .library(name: "SwiftVT", targets: ["SwiftVT"]),
        .library(name: "SoftwareCodecs", targets: ["SoftwareCodecs"]),
        .library(name: "VAPlumbing", targets: ["VAPlumbing"]),
        .library(name: "VAAPICodecs", targets: ["VAAPICodecs"]),
        .library(name: "CUDAPlumbing", targets: ["CUDAPlumbing"]),
        .library(name: "NVDECCodecs", targets: ["NVDECCodecs"]),
        // The GStreamer plugin: libgstswiftvt.so, plugin name "swiftvt".
        .library(name: "gstswiftvt", type: .dynamic, targets: ["SwiftVTElements"]),
        .executable(name: "swiftvt-h264-fuzz", targets: ["H264Fuzz"]),
        .plugin(name: "InstallGStreamerPlugin", targets: ["InstallGStreamerPlugin"]),
        .executable(name: "swiftvt-bench", targets: ["SwiftVTBench"]),
        // The seeds' Swift code against SwiftVT's own API, without GStreamer (Examples/, README).
        .executable(name: "swiftvt-example-decode", targets: ["DecodeToFrames"]),
        .executable(name: "swiftvt-example-compress", targets: ["CompressForNetwork"]),
        .executable(name: "swiftvt-example-multipass", targets: ["MultiPassEncode"]),
        // The Swift half of multi-pass encoding across machines (pipelines/multipass-farm.py on Dask).
        .executable(name: "swiftvt-farm", targets: ["MultiPassFarm"])
    ],
    targets: [
        .target(name: "MediaCore", swiftSettings: optimized),
        // What H.264 and H.265 share: bit reader and writer (Exp-Golomb), RBSP emulation
        // prevention, Annex B start codes, length-prefixed NAL units. Swift stdlib and Glibc only.
        .target(name: "NALBitstream", swiftSettings: optimized),
        .target(name: "H264", dependencies: ["MediaCore", "NALBitstream"], swiftSettings: optimized),
        // The H.265/HEVC bitstream layer beside H264 (issue 35): parameter sets, slice segment
        // headers, SEI, access units, POC, hvcC, format descriptions.
        .target(name: "H265", dependencies: ["MediaCore", "NALBitstream"], swiftSettings: optimized),
        // Sessions (VTDecompressionSession model) and the backend protocols; no C libraries.
        .target(name: "SwiftVT", dependencies: ["MediaCore", "NALBitstream", "H264", "H265"], swiftSettings: optimized),
        // libavcodec/libavutil headers, and forwarders that load the libraries on first use
        // (Sources/CFFmpeg/loader.c): hidden, so nothing is exported or interposed.
        .target(name: "CFFmpeg", linkerSettings: [.linkedLibrary("dl")]),
        // libx264 header, and forwarders that load libx264 on first use (Sources/CX264/loader.c),
        // hidden like CFFmpeg's.
        .target(name: "CX264", linkerSettings: [.linkedLibrary("dl")]),
        // libx265 header, and a forwarder of x265_api_get that loads libx265 on first use
        // (Sources/CX265/loader.c), hidden like CX264's; every other call goes through x265_api.
        .target(name: "CX265", linkerSettings: [.linkedLibrary("dl")]),
        // Software backends: the libavcodec decoder and the x264 and x265 encoders.
        .target(
            name: "SoftwareCodecs",
            dependencies: ["SwiftVT", "MediaCore", "NALBitstream", "H264", "H265", "CFFmpeg", "CX264", "CX265"],
            swiftSettings: optimized),
        // libva (with its DRM and X11 display libraries) headers, and forwarders that load the
        // libraries on first use (Sources/CVA/loader.c), hidden like CFFmpeg's: the plugin loads
        // and decodes in software where libva is not installed.
        .target(name: "CVA", linkerSettings: [.linkedLibrary("dl")]),
        // VA-API plumbing, no codec logic: display discovery, capability probe, owners of configs,
        // surfaces, contexts, buffers and images, one error type for every VA call.
        .target(name: "VAPlumbing", dependencies: ["CVA"], swiftSettings: optimized),
        // Hardware backends: the VA-API H.264 decoder (the H264 layer's decoding state machine
        // over a VA accelerator).
        .target(
            name: "VAAPICodecs", dependencies: ["SwiftVT", "MediaCore", "NALBitstream", "H264", "VAPlumbing", "CVA"],
            swiftSettings: optimized),
        // The CUDA driver API and NVDEC (the ffnvcodec headers, Debian libffmpeg-nvenc-dev: no CUDA
        // toolkit), loaded on first use (Sources/CCUDA/loader.c), hidden like CVA's.
        .target(name: "CCUDA", linkerSettings: [.linkedLibrary("dl")]),
        // CUDA plumbing, no codec logic: the driver, devices, contexts, streams, NVDEC decoders and
        // mapped frames as owned types, one error type for every CUDA call.
        .target(name: "CUDAPlumbing", dependencies: ["CCUDA"], swiftSettings: optimized),
        // Hardware backends on NVIDIA GPUs: the H.264 decoder (the H264 layer's decoding state
        // machine over an NVDEC accelerator).
        .target(
            name: "NVDECCodecs", dependencies: ["SwiftVT", "MediaCore", "H264", "CUDAPlumbing", "CCUDA"],
            swiftSettings: optimized),
        .plugin(
            name: "InstallGStreamerPlugin",
            capability: .command(
                intent: .custom(
                    verb: "install-plugin",
                    description:
                        "Build libgstswiftvt.so in release and install it into ~/.local/share/gstreamer-1.0/plugins"))),
        .systemLibrary(
            name: "CGStreamer", path: "Sources/CGStreamer", pkgConfig: "gstreamer-video-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        // What Swift cannot express, for no element in particular: GST_PLUGIN_DEFINE and stand-ins
        // for the macros and variadic functions Swift cannot import, one header per GStreamer type.
        .target(name: "CSwiftVTShim", dependencies: ["CGStreamer"]),
        .target(
            name: "SwiftVTElements",
            dependencies: [
                "CSwiftVTShim", "CGStreamer", "H264", "H265", "MediaCore", "NALBitstream", "SwiftVT", "SoftwareCodecs",
                "VAAPICodecs", "NVDECCodecs"
            ],
            // Debug builds (`swift test`) also register the elements of test builds only
            // (Elements.swift's testBuildOnly); the release plugin users install never has them.
            swiftSettings: optimized + [.define("SWIFTVT_TEST_BUILD_ELEMENTS", .when(configuration: .debug))],
            // A release plugin carries its Swift runtime, so it loads on machines without the
            // toolchain (debug builds and `swift test` use the shared runtime).
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // swiftvt-farm: a chunk's passes, the plan over every chunk, the splice (docs/farm.md).
        // Its Swift runtime is linked in (release) so it runs on worker hosts without the toolchain.
        .executableTarget(
            name: "MultiPassFarm",
            dependencies: ["SwiftVT", "SoftwareCodecs", "MediaCore", "H264", "SwiftVTFileSupport"],
            swiftSettings: optimized,
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // File reading for the tools around the plugin (bench, fuzz replay, tests).
        .target(name: "SwiftVTFileSupport", swiftSettings: strictSwift),
        .executableTarget(
            name: "H264Fuzz", dependencies: ["H264", "H265", "MediaCore", "SwiftVTFileSupport"], path: "fuzz/H264Fuzz",
            swiftSettings: strictSwift),
        .executableTarget(
            name: "SwiftVTBench", dependencies: ["H264", "MediaCore", "SwiftVTFileSupport"], path: "bench/SwiftVTBench",
            swiftSettings: optimized),
        // The examples: seed case 2 (decode to pixel buffers), case 4 (compress for the network)
        // and multi-pass, with what they share (Annex B writing, generated pictures, options).
        .target(
            name: "ExampleSupport", dependencies: ["SwiftVT", "MediaCore", "H264", "SwiftVTFileSupport"],
            path: "Examples/ExampleSupport", swiftSettings: strictSwift),
        .executableTarget(
            name: "DecodeToFrames",
            dependencies: [
                "ExampleSupport", "SwiftVT", "SoftwareCodecs", "VAAPICodecs", "NVDECCodecs", "H264", "MediaCore",
                "SwiftVTFileSupport"
            ],
            path: "Examples/DecodeToFrames", swiftSettings: strictSwift),
        .executableTarget(
            name: "CompressForNetwork",
            dependencies: [
                "ExampleSupport", "SwiftVT", "SoftwareCodecs", "VAAPICodecs", "MediaCore", "SwiftVTFileSupport"
            ],
            path: "Examples/CompressForNetwork", swiftSettings: strictSwift),
        .executableTarget(
            name: "MultiPassEncode",
            dependencies: ["ExampleSupport", "SwiftVT", "SoftwareCodecs", "MediaCore", "SwiftVTFileSupport"],
            path: "Examples/MultiPassEncode", swiftSettings: strictSwift),
        // Shared by the test targets: the corpus, MD5 (MediaCore's, re-exported), seeded randomness.
        .target(
            name: "SwiftVTTestSupport", dependencies: ["SwiftVTFileSupport", "MediaCore"],
            path: "Tests/SwiftVTTestSupport", swiftSettings: strictSwift),
        .testTarget(
            name: "MediaCoreTests", dependencies: ["MediaCore", "SwiftVTTestSupport"], swiftSettings: strictSwift),
        .testTarget(
            name: "H264Tests", dependencies: ["H264", "MediaCore", "NALBitstream", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "H265Tests", dependencies: ["H265", "MediaCore", "SwiftVTTestSupport"], swiftSettings: strictSwift),
        .testTarget(
            name: "SwiftVTElementsTests",
            dependencies: [
                "SwiftVTElements", "CSwiftVTShim", "CGStreamer", "H264", "H265", "MediaCore", "SwiftVT",
                "SoftwareCodecs", "VAAPICodecs", "SwiftVTTestSupport"
            ],
            swiftSettings: strictSwift),
        .testTarget(
            name: "SwiftVTSessionTests",
            dependencies: ["SwiftVT", "SoftwareCodecs", "MediaCore", "H264", "H265", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        // The VA plumbing alone (no codec) on the project's software VA driver, through
        // scripts/with-software-va.sh; without a VA device only the discovery-failure tests run.
        .testTarget(
            name: "VAPlumbingTests", dependencies: ["VAPlumbing", "CVA", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        // The CUDA plumbing on the software CUDA double (meson's cuda-swift-tests runs them through
        // scripts/with-software-cuda.sh; the plain swift-test run skips them, as VAPlumbingTests).
        .testTarget(
            name: "CUDAPlumbingTests", dependencies: ["CUDAPlumbing", "CCUDA"], swiftSettings: strictSwift),
        // The VA codec layer's decisions that need no device (rate control, misc parameters).
        .testTarget(
            name: "VAAPICodecsTests",
            dependencies: ["VAAPICodecs", "VAPlumbing", "SwiftVT", "H264", "CVA", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        // swiftvt-farm's own code (an executable target, tested through @testable import): the frame
        // stream reader and the options.
        .testTarget(
            name: "MultiPassFarmTests", dependencies: ["MultiPassFarm", "SwiftVT", "MediaCore", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "SwiftVTCompressionTests",
            dependencies: ["SwiftVT", "SoftwareCodecs", "MediaCore", "H264", "H265", "SwiftVTTestSupport"],
            swiftSettings: strictSwift),
        // FrameSilo and MultiPassStorage: files, passes, corruption, crashes, full disks.
        .testTarget(
            name: "SwiftVTMultiPassTests", dependencies: ["SwiftVT", "MediaCore", "H264", "SwiftVTTestSupport"],
            swiftSettings: strictSwift)
    ]
)
