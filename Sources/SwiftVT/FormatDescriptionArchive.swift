import MediaCore

// A FormatDescription as bytes and back, field by field: the frame silo's index stores the
// descriptions of its samples this way. Every field is kept (not only the parameter sets), so a
// description read back is equal to the one written, for any codec.

extension ByteWriter {
    /// Every field of `description`, so that reading it back gives an equal description without
    /// parsing the parameter sets again (and for any codec, not only H.264).
    mutating func append(_ description: FormatDescription) {
        append(description.mediaType.rawValue.rawValue)
        append(description.codecType.rawValue)
        append(description.dimensions.width)
        append(description.dimensions.height)
        append(UInt8(truncatingIfNeeded: description.nalUnitHeaderLength))
        append(UInt32(truncatingIfNeeded: description.parameterSets.count))
        for set in description.parameterSets { appendBlob(set) }
        let extensions = description.extensions
        if let ratio = extensions.pixelAspectRatio {
            append(UInt8(1))
            append(ratio.horizontalSpacing)
            append(ratio.verticalSpacing)
        } else {
            append(UInt8(0))
        }
        if let aperture = extensions.cleanAperture {
            append(UInt8(1))
            for value in [aperture.width, aperture.height, aperture.horizontalOffset, aperture.verticalOffset] {
                append(value.numerator)
                append(value.denominator)
            }
        } else {
            append(UInt8(0))
        }
        // The one-byte codes: 0 absent, else the value plus one in 16 bits.
        let codes: [UInt8?] = [
            extensions.colorPrimaries?.rawValue, extensions.transferFunction?.rawValue,
            extensions.yCbCrMatrix?.rawValue,
            extensions.fullRange.map { $0 ? 1 : 0 }, extensions.chromaLocationTopField?.rawValue,
            extensions.chromaLocationBottomField?.rawValue, extensions.chromaSubsampling?.rawValue
        ]
        for code in codes {
            append(code.map { UInt16($0) + 1 } ?? 0)
        }
        for number in [extensions.fieldCount, extensions.bitDepth] {
            append(UInt8(number == nil ? 0 : 1))
            append(Int64(number ?? 0))
        }
        let atoms = extensions.sampleDescriptionAtoms.sorted { $0.key.rawValue < $1.key.rawValue }
        append(UInt32(truncatingIfNeeded: atoms.count))
        for (key, value) in atoms {
            append(key.rawValue)
            appendBlob(value)
        }
    }
}

extension ByteReader {
    mutating func readFormatDescription() throws(VTError) -> FormatDescription {
        let mediaType = MediaType(rawValue: FourCharCode(rawValue: try read(UInt32.self)))
        let codecType = FourCharCode(rawValue: try read(UInt32.self))
        let dimensions = VideoDimensions(width: try read(Int32.self), height: try read(Int32.self))
        let nalUnitHeaderLength = Int(try read(UInt8.self))
        let setCount = Int(try read(UInt32.self))
        guard setCount <= remaining / 4 else {
            throw VTError(.corrupt, "\(context) is corrupt: \(setCount) parameter sets")
        }
        var parameterSets: [[UInt8]] = []
        for index in 0..<setCount { parameterSets.append(try readBlob("parameter set \(index)")) }
        var extensions = FormatDescriptionExtensions()
        if try read(UInt8.self) != 0 {
            extensions.pixelAspectRatio = PixelAspectRatio(
                horizontalSpacing: try read(Int32.self), verticalSpacing: try read(Int32.self))
        }
        if try read(UInt8.self) != 0 {
            var values: [Rational] = []
            for _ in 0..<4 { values.append(Rational(try read(Int32.self), try read(Int32.self))) }
            extensions.cleanAperture = CleanAperture(
                width: values[0], height: values[1], horizontalOffset: values[2], verticalOffset: values[3])
        }
        var codes: [UInt8?] = []
        for _ in 0..<7 {
            let stored = try read(UInt16.self)
            guard stored <= 256 else { throw VTError(.corrupt, "\(context) is corrupt: colour code \(stored)") }
            codes.append(stored == 0 ? nil : UInt8(stored - 1))
        }
        extensions.colorPrimaries = codes[0].map(ColorPrimaries.init(rawValue:))
        extensions.transferFunction = codes[1].map(TransferFunction.init(rawValue:))
        extensions.yCbCrMatrix = codes[2].map(YCbCrMatrix.init(rawValue:))
        extensions.fullRange = codes[3].map { $0 != 0 }
        extensions.chromaLocationTopField = codes[4].map(ChromaLocation.init(rawValue:))
        extensions.chromaLocationBottomField = codes[5].map(ChromaLocation.init(rawValue:))
        if let raw = codes[6] {
            guard let subsampling = ChromaSubsampling(rawValue: raw) else {
                throw VTError(.corrupt, "\(context) is corrupt: chroma subsampling \(raw)")
            }
            extensions.chromaSubsampling = subsampling
        }
        var numbers: [Int?] = []
        for _ in 0..<2 {
            let present = try read(UInt8.self) != 0
            let value = Int(try read(Int64.self))
            numbers.append(present ? value : nil)
        }
        extensions.fieldCount = numbers[0]
        extensions.bitDepth = numbers[1]
        let atomCount = Int(try read(UInt32.self))
        guard atomCount <= remaining / 8 else { throw VTError(.corrupt, "\(context) is corrupt: \(atomCount) atoms") }
        for index in 0..<atomCount {
            let key = FourCharCode(rawValue: try read(UInt32.self))
            extensions.sampleDescriptionAtoms[key] = try readBlob("atom \(index)")
        }
        do {
            return try FormatDescription(
                mediaType: mediaType, codecType: codecType, dimensions: dimensions, extensions: extensions,
                parameterSets: parameterSets, nalUnitHeaderLength: nalUnitHeaderLength)
        } catch {
            throw VTError(.corrupt, "\(context) is corrupt: \(error)")
        }
    }
}
