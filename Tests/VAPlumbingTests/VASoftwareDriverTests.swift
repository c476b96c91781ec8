import CVA
import Glibc
import SwiftVTTestSupport
import Testing
import VAPlumbing

/// Collects a connection's log (libva's messages and the plumbing's).
final class LogLines {
    var lines: [String] = []
}

/// The VA plumbing on the project's software VA driver (tests/va-driver/): run through
///   scripts/with-software-va.sh swift test --filter VAPlumbingTests
/// which builds the driver, starts Xvfb and sets DISPLAY, LIBVA_DRIVER_NAME and LIBVA_DRIVERS_PATH.
///
/// Serialized: the driver's report and fault-injection variables are process-wide environment,
/// which the driver reads when a display is initialised (driver.c, __vaDriverInit_1_17), not per
/// call. So each test sets them only around `open` (the connection keeps what its driver read),
/// keeping the window small for suites of other targets that run at the same time.
///
/// Displays are opened with an empty render node directory, so that the X11 path is the one
/// tested on any machine, with or without a GPU.
@Suite("VA plumbing on the software VA driver", .serialized)
struct VASoftwareDriverTests {
    static var hasDevice: Bool { getenv("LIBVA_DRIVER_NAME") != nil }

    /// `open` with `environment` set for the driver's initialisation only, then restored.
    static func open(
        _ environment: [(String, String)] = [], renderNodeDirectory: String, log: LogLines? = nil
    ) throws(VADisplayDiscoveryError) -> VADisplayConnection {
        let previous = environment.map { ($0.0, getenv($0.0).map { String(cString: $0) }) }
        for (name, value) in environment { setenv(name, value, 1) }
        defer {
            for (name, value) in previous {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        return try VADisplayConnection.open(renderNodeDirectory: renderNodeDirectory, log: { log?.lines.append($0) })
    }

    /// The `live-objects` lines the driver wrote to `report` at each vaTerminate.
    static func liveObjectLines(_ report: String) -> [String] {
        (Corpus.readText(report) ?? "").split(separator: "\n").map(String.init).filter { $0.hasPrefix("live-objects") }
    }

    static let nothingLive = "live-objects configs=0 contexts=0 surfaces=0 buffers=0 images=0"

    static let yuv420 = UInt32(VA_RT_FORMAT_YUV420)
    static let nv12 = UInt32(VA_FOURCC_NV12)

    @Test(
        "the driver opens on the X11 display: description, vendor, version, libva's messages in the log",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func opens() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let log = LogLines()
        let connection = try Self.open(renderNodeDirectory: empty.path, log: log)
        let display = try #require(getenv("DISPLAY").map { String(cString: $0) })
        #expect(connection.description == "X11 display \(display)")
        #expect(!connection.vendor.isEmpty)
        #expect(connection.vendor.contains("swiftvt"), "\(connection.vendor)")
        #expect(connection.apiVersion.major == 1 && connection.apiVersion.minor >= 17)
        // libva's info messages ("VA-API version 1.17.0", "va_openDriver() returns 0") reach
        // the log instead of stderr, as does the discovery's own line.
        #expect(log.lines.contains { $0.hasPrefix("libva: ") }, "\(log.lines)")
        #expect(log.lines.contains { $0.hasPrefix("VA display: X11 display \(display)") }, "\(log.lines)")
    }

    @Test(
        "the probe lists H.264 decoding and encoding, with formats, sizes and the encoder's options",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func probe() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let connection = try Self.open(renderNodeDirectory: empty.path)
        let capabilities = try connection.probeCapabilities()
        #expect(capabilities.problems.isEmpty, "\(capabilities.problems)")
        for profile in [VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High] {
            #expect(capabilities.supports(profile: profile, entrypoint: VAEntrypointVLD))
            #expect(capabilities.supports(profile: profile, entrypoint: VAEntrypointEncSlice))
            #expect(!capabilities.supports(profile: profile, entrypoint: VAEntrypointEncSliceLP))
        }
        #expect(!capabilities.supports(profile: VAProfileHEVCMain, entrypoint: VAEntrypointVLD))
        #expect(
            capabilities.summary
                == "H264ConstrainedBaseline: VLD, EncSlice; H264Main: VLD, EncSlice; H264High: VLD, EncSlice")
        // The encoder's options as an encoder reads them (tests/va-driver/README.md).
        let options = try connection.configAttributes(
            profile: VAProfileH264High, entrypoint: VAEntrypointEncSlice,
            types: [
                VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders, VAConfigAttribEncMaxRefFrames,
                VAConfigAttribEncQualityRange, VAConfigAttribEncROI
            ])
        #expect(options[VAConfigAttribRateControl.rawValue] == UInt32(VA_RC_CQP | VA_RC_CBR | VA_RC_VBR))
        // Sequence, picture, slice and raw data (the SEI of captions).
        #expect(options[VAConfigAttribEncPackedHeaders.rawValue] == 0x17)
        #expect(options[VAConfigAttribEncMaxRefFrames.rawValue] == UInt32(4 | (1 << 16)))
        #expect(options[VAConfigAttribEncQualityRange.rawValue] == 7)
        #expect(options[VAConfigAttribEncROI.rawValue] == nil, "an attribute the driver does not know is absent")
        let high = try #require(capabilities.endpoints.first { $0.profile == VAProfileH264High })
        #expect(high.rtFormats.map { $0 & Self.yuv420 != 0 } == true)
        #expect(high.maxPictureWidth == 4096 && high.maxPictureHeight == 4096)
        #expect(capabilities.maxPictureSize(profile: VAProfileH264High, entrypoint: VAEntrypointVLD)?.width == 4096)
    }

    @Test(
        "a config's surface attributes offer NV12; the driver's image formats include NV12",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func surfaceAttributes() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let connection = try Self.open(renderNodeDirectory: empty.path)
        let config = try VAConfig(
            connection: connection, profile: VAProfileH264High, entrypoint: VAEntrypointVLD,
            attributes: [VAConfigAttrib(type: VAConfigAttribRTFormat, value: Self.yuv420)])
        #expect(config.profile == VAProfileH264High && config.entrypoint == VAEntrypointVLD)
        let attributes = try connection.surfaceAttributes(config: config)
        #expect(attributes.pixelFormats.contains(Self.nv12), "\(attributes.pixelFormats)")
        #expect((attributes.minWidth ?? 0) >= 1 && (attributes.maxWidth ?? 0) >= 1920)
        #expect((attributes.minHeight ?? 0) >= 1 && (attributes.maxHeight ?? 0) >= 1080)
        #expect(attributes.memoryTypes.map { $0 & UInt32(VA_SURFACE_ATTRIB_MEM_TYPE_VA) != 0 } == true)
        #expect(try connection.imageFormats().contains { $0.fourcc == Self.nv12 })
    }

    @Test(
        "configs, surfaces, contexts, buffers and images made and dropped: nothing is live at vaTerminate",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func lifetimes() throws {
        let directory = try TemporaryDirectory("va-plumbing")
        let report = directory.path + "/report"
        do {
            let connection = try Self.open([("SWIFTVT_VA_REPORT", report)], renderNodeDirectory: directory.path)
            let config = try VAConfig(
                connection: connection, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD,
                attributes: [VAConfigAttrib(type: VAConfigAttribRTFormat, value: Self.yuv420)])
            let surfaces = try VASurfaceSet(
                connection: connection, rtFormat: Self.yuv420, width: 64, height: 48, count: 4, fourcc: Self.nv12)
            #expect(surfaces.ids.count == 4 && Set(surfaces.ids).count == 4)
            let context = try VAContext(
                connection: connection, config: config, width: 64, height: 48, renderTargets: surfaces.ids)
            for surface in surfaces.ids {
                #expect(try connection.querySurfaceStatus(surface) == VASurfaceReady)
                // No failed picture: no error records.
                #expect(try connection.querySurfaceError(surface).isEmpty)
            }

            // A buffer of two elements from bytes, read back through a mapping.
            let bytes: [UInt8] = (0..<24).map { UInt8($0) }
            let parameters = try bytes.withUnsafeBytes { raw throws(VAError) in
                try VABufferObject(
                    connection: connection, context: context, type: VASliceParameterBufferType, bytes: raw,
                    elementCount: 2)
            }
            #expect(parameters.elementSize == 12 && parameters.elementCount == 2)
            #expect(try parameters.withMappedBytes { Array($0) } == bytes)

            // An uninitialised buffer written through one mapping, read through another.
            let scratch = try VABufferObject(
                connection: connection, context: context, type: VASliceDataBufferType, elementSize: 100)
            _ = try scratch.withMappedBytes { $0.initializeMemory(as: UInt8.self, repeating: 0x5A) }
            #expect(try scratch.withMappedBytes { $0.allSatisfy { $0 == 0x5A } })
            // Left mapped on purpose: the deinit unmaps before destroying.
            _ = try scratch.map()

            // An encoder's coded buffer: the software driver does not encode, so the test writes
            // the two-segment list a driver would (va.h, VACodedBufferSegment) into the buffer's
            // own memory, which this driver keeps at one address, and reads it back.
            let segmentSize = MemoryLayout<VACodedBufferSegment>.stride
            let coded = try VABufferObject(
                connection: connection, context: context, type: VAEncCodedBufferType, elementSize: 2 * segmentSize + 16)
            let memory = try coded.map()
            let payload = memory + 2 * segmentSize
            for (index, byte) in [0, 0, 0, 1, 0x67, 0x42, 0xC0].enumerated() {
                payload.storeBytes(of: UInt8(byte), toByteOffset: index, as: UInt8.self)
            }
            var first = VACodedBufferSegment()
            first.size = 4
            first.buf = payload
            first.next = memory + segmentSize
            var second = VACodedBufferSegment()
            second.size = 3
            second.buf = payload + 4
            memory.storeBytes(of: first, as: VACodedBufferSegment.self)
            (memory + segmentSize).storeBytes(of: second, as: VACodedBufferSegment.self)
            try coded.unmap()
            let segments = try coded.withCodedSegments { $0.map { Array($0) } }
            #expect(segments == [[0, 0, 0, 1], [0x67, 0x42, 0xC0]])

            // The same surface through vaDeriveImage and through vaCreateImage + vaGetImage.
            let derived = try VAMappedImage(deriving: surfaces.ids[1], connection: connection)
            #expect(derived.image.format.fourcc == Self.nv12)
            #expect(derived.image.width == 64 && derived.image.height == 48 && derived.image.num_planes == 2)
            #expect(derived.image.pitches.0 >= 64 && derived.image.offsets.1 >= derived.image.pitches.0 * 48)
            #expect(derived.data.count >= Int(derived.image.offsets.1 + derived.image.pitches.1 * 24))
            // A derived image is the surface's memory (this driver's surfaces are in system
            // memory), so a pattern written there is what vaGetImage copies.
            let writable = UnsafeMutableRawBufferPointer(mutating: derived.data)
            for index in writable.indices { writable[index] = UInt8(truncatingIfNeeded: index &* 7) }
            let copied = try VAMappedImage(
                copying: surfaces.ids[1], connection: connection, fourcc: Self.nv12, width: 64, height: 48)
            #expect(copied.image.format.fourcc == Self.nv12 && copied.image.image_id != derived.image.image_id)
            for (plane, rows) in [(0, 48), (1, 24)] {
                let derivedPitch = Int(plane == 0 ? derived.image.pitches.0 : derived.image.pitches.1)
                let derivedOffset = Int(plane == 0 ? derived.image.offsets.0 : derived.image.offsets.1)
                let copiedPitch = Int(plane == 0 ? copied.image.pitches.0 : copied.image.pitches.1)
                let copiedOffset = Int(plane == 0 ? copied.image.offsets.0 : copied.image.offsets.1)
                var same = true
                for row in 0..<rows {
                    let a = derived.data[
                        (derivedOffset + row * derivedPitch)..<(derivedOffset + row * derivedPitch + 64)]
                    let b = copied.data[(copiedOffset + row * copiedPitch)..<(copiedOffset + row * copiedPitch + 64)]
                    same = same && a.elementsEqual(b)
                }
                #expect(same, "plane \(plane) of the copy differs from the surface")
            }
            #expect(Self.liveObjectLines(report).isEmpty, "the display was terminated while in use")
        }
        // Every owner is gone, and the connection with them: vaTerminate wrote the report.
        #expect(Self.liveObjectLines(report) == [Self.nothingLive])
    }

    @Test(
        "a picture without parameters: vaEndPicture refuses it, the surface has no decoding-error records",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func refusedPicture() throws {
        // The plumbing has no codec, so the one picture it can submit is an empty one. The driver
        // prints a "VALIDATION: picture: client no picture parameter buffer" line for it (to
        // stderr and the report): expected here. It also counts as one vaEndPicture of the
        // process for SWIFTVT_VA_FAIL_END_PICTURE.
        let directory = try TemporaryDirectory("va-plumbing")
        let report = directory.path + "/report"
        do {
            let connection = try Self.open([("SWIFTVT_VA_REPORT", report)], renderNodeDirectory: directory.path)
            let config = try VAConfig(
                connection: connection, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD, attributes: [])
            let surfaces = try VASurfaceSet(
                connection: connection, rtFormat: Self.yuv420, width: 64, height: 48, count: 2, fourcc: Self.nv12)
            let context = try VAContext(
                connection: connection, config: config, width: 64, height: 48, renderTargets: surfaces.ids)
            let target = surfaces.ids[1]
            try connection.beginPicture(context: context, renderTarget: target)
            try connection.renderPicture(context: context, buffers: [])
            do throws(VAError) {
                try connection.endPicture(context: context)
                Issue.record("an empty picture was decoded")
            } catch {
                // The driver's status for a picture without its parameter buffer.
                #expect(error.call == "vaEndPicture")
                #expect(error.status == Int32(VA_STATUS_ERROR_INVALID_PARAMETER), "\(error)")
            }
            // This driver decodes inside vaEndPicture: nothing left to wait for.
            try connection.syncSurface(target)
            // Macroblock records exist only after VA_STATUS_ERROR_DECODING_ERROR (va.h); this
            // picture failed otherwise, so the driver has none (error_info NULL).
            #expect(try connection.querySurfaceError(target).isEmpty)
            #expect(try connection.querySurfaceError(surfaces.ids[0]).isEmpty)
            // The context takes the next picture after a failed one.
            try connection.beginPicture(context: context, renderTarget: surfaces.ids[0])
        }
        #expect(Self.liveObjectLines(report) == [Self.nothingLive])
    }

    @Test(
        "fault injection: vaCreateConfig, vaCreateSurfaces and vaCreateContext failures are VAErrors naming the call",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func creationFailures() throws {
        let directory = try TemporaryDirectory("va-plumbing")
        let report = directory.path + "/report"
        do {
            let failing = try Self.open(
                [("SWIFTVT_VA_FAIL", "create-config"), ("SWIFTVT_VA_REPORT", report)],
                renderNodeDirectory: directory.path)
            do throws(VAError) {
                _ = try VAConfig(
                    connection: failing, profile: VAProfileH264High, entrypoint: VAEntrypointVLD, attributes: [])
                Issue.record("vaCreateConfig did not fail")
            } catch {
                #expect(error.call == "vaCreateConfig")
                #expect(error.status == Int32(VA_STATUS_ERROR_OPERATION_FAILED))
                #expect(error.context == "creating a H264High VLD config")
                #expect(
                    error.description
                        == "vaCreateConfig failed: operation failed (VAStatus 0x1) while creating a H264High VLD config"
                )
            }
            // The driver read SWIFTVT_VA_FAIL when this display was initialised: a display opened
            // after it is unset works, next to the failing one.
            let working = try Self.open(renderNodeDirectory: directory.path)
            let config = try VAConfig(
                connection: working, profile: VAProfileH264High, entrypoint: VAEntrypointVLD, attributes: [])
            #expect(config.id != VAConfigID(cva_invalid_id()))
        }

        do {
            let failing = try Self.open(
                [("SWIFTVT_VA_FAIL", "create-surfaces,create-context"), ("SWIFTVT_VA_REPORT", report)],
                renderNodeDirectory: directory.path)
            do throws(VAError) {
                _ = try VASurfaceSet(
                    connection: failing, rtFormat: Self.yuv420, width: 64, height: 48, count: 4, fourcc: Self.nv12)
                Issue.record("vaCreateSurfaces did not fail")
            } catch {
                #expect(error.call == "vaCreateSurfaces")
                #expect(error.status == Int32(VA_STATUS_ERROR_ALLOCATION_FAILED))
                #expect(error.description.hasSuffix("while creating 4 64x48 surfaces"), "\(error)")
            }
            let config = try VAConfig(
                connection: failing, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD, attributes: [])
            do throws(VAError) {
                _ = try VAContext(connection: failing, config: config, width: 64, height: 48, renderTargets: [])
                Issue.record("vaCreateContext did not fail")
            } catch {
                #expect(error.call == "vaCreateContext")
                #expect(error.status == Int32(VA_STATUS_ERROR_OPERATION_FAILED))
            }
        }
        // Failed creations leave nothing behind (one line per failing display: the working one
        // was opened without the report variable).
        #expect(Self.liveObjectLines(report) == [Self.nothingLive, Self.nothingLive])
    }

    @Test(
        "arguments C cannot take are VAErrors naming the call, not traps",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func argumentsOutOfRange() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let connection = try Self.open(renderNodeDirectory: empty.path)
        let invalidParameter = Int32(VA_STATUS_ERROR_INVALID_PARAMETER)
        do throws(VAError) {
            _ = try VASurfaceSet(
                connection: connection, rtFormat: Self.yuv420, width: 64, height: 48, count: -1, fourcc: Self.nv12)
            Issue.record("a negative surface count was accepted")
        } catch {
            #expect(error.call == "vaCreateSurfaces" && error.status == invalidParameter, "\(error)")
        }
        let config = try VAConfig(
            connection: connection, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD, attributes: [])
        let surfaces = try VASurfaceSet(
            connection: connection, rtFormat: Self.yuv420, width: 64, height: 48, count: 1, fourcc: Self.nv12)
        do throws(VAError) {
            _ = try VAContext(
                connection: connection, config: config, width: 1 << 40, height: 48, renderTargets: surfaces.ids)
            Issue.record("a width beyond 32 bits was accepted")
        } catch {
            #expect(error.call == "vaCreateContext" && error.status == invalidParameter, "\(error)")
        }
        let context = try VAContext(
            connection: connection, config: config, width: 64, height: 48, renderTargets: surfaces.ids)
        let bytes = [UInt8](repeating: 1, count: 10)
        let split = bytes.withUnsafeBytes { raw in
            Result { () throws(VAError) in
                try VABufferObject(
                    connection: connection, context: context, type: VASliceParameterBufferType, bytes: raw,
                    elementCount: 3)
            }
        }
        switch split {
        case .success: Issue.record("10 bytes were split into 3 elements")
        case .failure(let error):
            #expect(error.call == "vaCreateBuffer" && error.status == invalidParameter, "\(error)")
        }
    }

    @Test(
        "a busy device: discovery fails listing the X11 attempt with libva's status text and the driver",
        .enabled(if: hasDevice, "needs a VA device: run through scripts/with-software-va.sh"))
    func busyDevice() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let display = try #require(getenv("DISPLAY").map { String(cString: $0) })
        let driver = try #require(getenv("LIBVA_DRIVER_NAME").map { String(cString: $0) })
        let log = LogLines()
        do throws(VADisplayDiscoveryError) {
            _ = try Self.open([("SWIFTVT_VA_BUSY", "1")], renderNodeDirectory: empty.path, log: log)
            Issue.record("a busy device was opened")
        } catch {
            #expect(error.attempts.count == 2, "\(error.attempts)")
            #expect(error.attempts.first == "\(empty.path): no render nodes")
            let x11 = error.attempts.last ?? ""
            let busy = String(cString: try #require(vaErrorStr(VAStatus(VA_STATUS_ERROR_HW_BUSY))))
            #expect(x11.hasPrefix("X11 display \(display): vaInitialize failed: \(busy) (VAStatus 0x22)"), "\(x11)")
            #expect(x11.contains("driver \(driver) from LIBVA_DRIVERS_PATH="), "\(x11)")
            #expect(error.description.contains(x11))
            // libva's complaint about the driver went to the log, not only to stderr.
            #expect(log.lines.contains { $0.hasPrefix("libva: ") }, "\(log.lines)")
        }
        // The failed display was released cleanly: the device opens once it is not busy.
        let connection = try Self.open(renderNodeDirectory: empty.path)
        #expect(connection.description == "X11 display \(display)")
    }
}
