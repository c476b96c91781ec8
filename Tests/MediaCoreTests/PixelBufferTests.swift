import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct PixelBufferTests {
        /// (format, planes as (bytesPerSample, hsub, vsub), bit depth)
        static let expectedLayouts: [(PixelFormat, [(Int, Int, Int)], Int)] = [
            (.nv12VideoRange, [(1, 1, 1), (2, 2, 2)], 8),
            (.nv12FullRange, [(1, 1, 1), (2, 2, 2)], 8),
            (.p010VideoRange, [(2, 1, 1), (4, 2, 2)], 10),
            (.p010FullRange, [(2, 1, 1), (4, 2, 2)], 10),
            (.i420, [(1, 1, 1), (1, 2, 2), (1, 2, 2)], 8),
            (.i422, [(1, 1, 1), (1, 2, 1), (1, 2, 1)], 8),
            (.i444, [(1, 1, 1), (1, 1, 1), (1, 1, 1)], 8),
            (.i420TenBit, [(2, 1, 1), (2, 2, 2), (2, 2, 2)], 10),
            (.i422TenBit, [(2, 1, 1), (2, 2, 1), (2, 2, 1)], 10),
            (.i444TenBit, [(2, 1, 1), (2, 1, 1), (2, 1, 1)], 10),
            (.bgra, [(4, 1, 1)], 8),
            (.yuyv, [(4, 2, 1)], 8),
            (.uyvy, [(4, 2, 1)], 8),
            (.gray8, [(1, 1, 1)], 8)
        ]

        @Test func formatTablesCoverEverySupportedFormat() {
            #expect(Set(Self.expectedLayouts.map(\.0)) == Set(PixelFormat.allSupported))
            for (format, planes, depth) in Self.expectedLayouts {
                #expect(format.isSupported && format.planeCount == planes.count, "\(format)")
                #expect(format.bitDepth == depth && format.isPlanar == (planes.count > 1), "\(format)")
                for (index, plane) in planes.enumerated() {
                    let layout = format.planeLayout(at: index)
                    #expect(layout?.bytesPerSample == plane.0, "\(format) plane \(index)")
                    #expect(layout?.horizontalSubsampling == plane.1, "\(format) plane \(index)")
                    #expect(layout?.verticalSubsampling == plane.2, "\(format) plane \(index)")
                }
                #expect(format.planeLayout(at: planes.count) == nil)
                #expect(format.planeWidth(for: -1, width: 10) == nil)
            }
            #expect(PixelFormat.i420.planeWidth(for: 1, width: 33) == 17)
            #expect(PixelFormat.i420.planeHeight(for: 2, height: 17) == 9)
            #expect(PixelFormat.i422.planeHeight(for: 1, height: 17) == 17)
            #expect(PixelFormat.i420.planeWidth(for: 0, width: -1) == nil)
            let unknown = PixelFormat(rawValue: "ABCD")
            #expect(!unknown.isSupported && unknown.planeCount == 0 && unknown.planeWidth(for: 0, width: 4) == nil)
            #expect(PixelFormat.nv12FullRange.isFullRange == true && PixelFormat.nv12VideoRange.isFullRange == false)
            #expect(PixelFormat.i420.isFullRange == nil)
            #expect(PixelFormat.i422TenBit.chromaSubsampling == .yuv422 && PixelFormat.bgra.chromaSubsampling == nil)
        }

        @Test(arguments: [(1, 1), (2, 2), (33, 17), (1920, 1080), (1921, 1081), (64, 1), (1, 64)])
        func planeGeometryForEveryFormat(width: Int, height: Int) throws {
            for (format, planes, _) in Self.expectedLayouts {
                if width % format.requiredWidthMultiple != 0 {
                    #expect(throws: PixelBufferError.widthNotMultiple(width: width, requiredWidthMultiple: 2)) {
                        try PixelBuffer(width: width, height: height, pixelFormat: format)
                    }
                    continue
                }
                for alignment in [1, 16, 64, 4096] {
                    let buffer = try PixelBuffer(
                        width: width, height: height, pixelFormat: format, rowAlignment: alignment)
                    #expect(buffer.width == width && buffer.height == height && buffer.pixelFormat == format)
                    #expect(buffer.planeCount == planes.count && buffer.ownsMemory)
                    var previousEnd: UnsafeMutableRawPointer?
                    for (index, plane) in buffer.planes.enumerated() {
                        let (bytesPerSample, horizontal, vertical) = planes[index]
                        let expectedWidth = (width + horizontal - 1) / horizontal
                        let expectedHeight = (height + vertical - 1) / vertical
                        #expect(plane.width == expectedWidth && plane.height == expectedHeight, "\(format) \(index)")
                        #expect(plane.width == format.planeWidth(for: index, width: width))
                        #expect(plane.height == format.planeHeight(for: index, height: height))
                        #expect(plane.bytesPerRow >= expectedWidth * bytesPerSample)
                        #expect(plane.bytesPerRow < expectedWidth * bytesPerSample + alignment)
                        #expect(plane.bytesPerRow % alignment == 0)
                        #expect(Int(bitPattern: plane.baseAddress) % alignment == 0)
                        if let previousEnd { #expect(plane.baseAddress >= previousEnd, "planes overlap") }
                        previousEnd = plane.baseAddress + plane.bytesPerRow * plane.height
                        // Touch the first and last byte of the plane (a sanitizer run would
                        // catch an undersized allocation).
                        plane.baseAddress.storeBytes(of: 1, as: UInt8.self)
                        (plane.baseAddress + plane.bytesPerRow * (plane.height - 1) + expectedWidth * bytesPerSample - 1)
                            .storeBytes(of: 2, as: UInt8.self)
                    }
                }
            }
        }

        @Test func impossibleGeometryIsATypedError() {
            #expect(throws: PixelBufferError.invalidDimensions(width: 0, height: 10)) {
                try PixelBuffer(width: 0, height: 10, pixelFormat: .i420)
            }
            #expect(throws: PixelBufferError.invalidDimensions(width: 10, height: -2)) {
                try PixelBuffer(width: 10, height: -2, pixelFormat: .i420)
            }
            #expect(throws: PixelBufferError.invalidDimensions(width: Int.max, height: Int.max)) {
                try PixelBuffer(width: Int.max, height: Int.max, pixelFormat: .bgra)
            }
            #expect(throws: PixelBufferError.invalidDimensions(width: PixelBuffer.maximumDimension + 1, height: 1)) {
                try PixelBuffer(width: PixelBuffer.maximumDimension + 1, height: 1, pixelFormat: .bgra)
            }
            #expect(throws: PixelBufferError.widthNotMultiple(width: 33, requiredWidthMultiple: 2)) {
                try PixelBuffer(width: 33, height: 2, pixelFormat: .yuyv)
            }
            #expect(throws: PixelBufferError.unsupportedPixelFormat(PixelFormat(rawValue: "ABCD"))) {
                try PixelBuffer(width: 2, height: 2, pixelFormat: PixelFormat(rawValue: "ABCD"))
            }
            for alignment in [0, -64, 3, 48, 8192] {
                #expect(throws: PixelBufferError.invalidRowAlignment(alignment)) {
                    try PixelBuffer(width: 2, height: 2, pixelFormat: .i420, rowAlignment: alignment)
                }
            }
        }

        @Test func externalMemory() throws {
            let counter = ReleaseCounter()
            // Freed only by the @Sendable release callback.
            nonisolated(unsafe) let luma = UnsafeMutableRawPointer.allocate(byteCount: 64 * 4, alignment: 64)
            nonisolated(unsafe) let chroma = UnsafeMutableRawPointer.allocate(byteCount: 64 * 2, alignment: 64)
            do {
                let buffer = try PixelBuffer(
                    width: 6, height: 4, pixelFormat: .nv12VideoRange,
                    externalPlanes: [
                        .init(baseAddress: luma, bytesPerRow: 64), .init(baseAddress: chroma, bytesPerRow: 64)
                    ],
                    attachments: PixelBufferAttachments(yCbCrMatrix: .bt709)
                ) {
                    counter.record()
                    luma.deallocate()
                    chroma.deallocate()
                }
                #expect(!buffer.ownsMemory && buffer.planes[1].baseAddress == chroma)
                #expect(
                    buffer.planes[1].width == 3 && buffer.planes[1].height == 2 && buffer.planes[1].bytesPerRow == 64)
                #expect(buffer.attachments.yCbCrMatrix == .bt709)
                #expect(counter.count == 0)
            }
            #expect(counter.count == 1)

            let dummy = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
            defer { dummy.deallocate() }
            #expect(throws: PixelBufferError.planeCountMismatch(expected: 3, actual: 1)) {
                try PixelBuffer(
                    width: 2, height: 2, pixelFormat: .i420,
                    externalPlanes: [.init(baseAddress: dummy, bytesPerRow: 2)]
                ) { counter.record() }
            }
            #expect(throws: PixelBufferError.planeRowTooShort(plane: 0, bytesPerRow: 7, minimumBytesPerRow: 8)) {
                try PixelBuffer(
                    width: 2, height: 2, pixelFormat: .bgra,
                    externalPlanes: [.init(baseAddress: dummy, bytesPerRow: 7)]
                ) { counter.record() }
            }
            #expect(counter.count == 1) // failed initializers do not release
        }

        @Test func attachmentsAreMutableUnderALock() async throws {
            let buffer = try PixelBuffer(width: 16, height: 16, pixelFormat: .i420)
            #expect(buffer.attachments == PixelBufferAttachments())
            buffer.setAttachments(PixelBufferAttachments(colorPrimaries: .bt709))
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for _ in 0..<1000 { buffer.updateAttachments { $0.fullRange = true } } }
                group.addTask { for _ in 0..<1000 { buffer.updateAttachments { $0.transferFunction = .bt709 } } }
            }
            let attachments = buffer.attachments
            #expect(attachments.colorPrimaries == .bt709 && attachments.fullRange == true)
            #expect(attachments.transferFunction == .bt709)
        }
    }
}
