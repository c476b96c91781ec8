import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// The parameter buffers of one picture, in the order the device gets them: sequence and misc
// parameters (rate control, frame rate, quality level) where a sequence starts, the picture and
// slice parameters, and SwiftVT's own SPS/PPS/slice headers as packed headers when the device
// takes them.

extension VAH264Encoder {
    func surface(for codingIndex: UInt64) -> VASurfaceID? {
        guard let objects, let slot = reconstructed[codingIndex] else { return nil }
        return objects.reconstructedSurfaces.ids[slot]
    }

    /// Every parameter buffer of a picture, in the order the device gets them.
    func makeBuffers(
        _ picture: H264CodingPicture<HeldFrame>, qp: Int, reconstructedSlot: Int, objects: VAEncodeObjects
    ) throws(VAError) -> [VABufferObject] {
        var buffers: [VABufferObject] = []
        let context = objects.context
        let packed = choice.options.packedHeaders
        if picture.type == .idr || sequenceParametersDue {
            var sequence = VAH264EncodeParameters.sequence(sps, structure: structure, rateControl: rateControl)
            buffers.append(try .holding(&sequence, connection: connection, context: context, type: VAEncSequenceParameterBufferType))
            let qualityLevel: Int? = choice.options.qualityRange > 1
                ? (properties.realTime ? choice.options.qualityRange : (choice.options.qualityRange + 1) / 2) : nil
            for (_, bytes) in VAH264EncodeParameters.miscParameters(
                rateControl: rateControl, frameRate: VAH264EncodeParameters.frameRateFraction(frameRate),
                qualityLevel: qualityLevel)
            {
                try bytes.withUnsafeBytes { raw in
                    Result { () throws(VAError) in
                        buffers.append(try VABufferObject(
                            connection: connection, context: context, type: VAEncMiscParameterBufferType, bytes: raw))
                    }
                }.get()
            }
        }
        var pictureParameters = VAH264EncodeParameters.picture(
            picture, pps: pps, reconstructed: objects.reconstructedSurfaces.ids[reconstructedSlot],
            references: surface(for:), codedBuffer: objects.codedBuffer.id)
        buffers.append(try .holding(&pictureParameters, connection: connection, context: context, type: VAEncPictureParameterBufferType))
        if picture.type == .idr {
            if packed & UInt32(VA_ENC_PACKED_HEADER_SEQUENCE) != 0 {
                buffers += try packedHeader(VAEncPackedHeaderSequence, nalUnit: try written { () throws(H264WritingError) in try sps.writeNALUnit() }, context: context)
            }
            if packed & UInt32(VA_ENC_PACKED_HEADER_PICTURE) != 0 {
                buffers += try packedHeader(VAEncPackedHeaderPicture, nalUnit: try written { () throws(H264WritingError) in try pps.writeNALUnit() }, context: context)
            }
        }
        let header = picture.sliceHeader(structure: structure, pictureParameterSet: pps, sliceQpDelta: qp - 26 - pps.picInitQpMinus26)
        var slice = VAH264EncodeParameters.slice(
            picture, header: header, macroblocks: widthInMacroblocks * heightInMacroblocks, references: surface(for:))
        if packed & UInt32(VA_ENC_PACKED_HEADER_SLICE) != 0 {
            let (sps, pps) = (self.sps, self.pps)
            let bits = try written { () throws(H264WritingError) in try header.write(sequenceParameterSet: sps, pictureParameterSet: pps) }
            // The header as RBSP bits after a start code and the NAL unit header byte; the
            // device appends slice_data() and applies emulation prevention over the whole NAL
            // unit (has_emulation_bytes 0).
            var data: [UInt8] = [0, 0, 0, 1, H264NALUnitWriter.headerByte(type: header.nalUnitType, nalRefIdc: header.nalRefIdc)]
            data += bits.bytes
            buffers += try packedHeader(
                VAEncPackedHeaderSlice, data: data, bitLength: 40 + bits.bitCount, hasEmulationBytes: false, context: context)
        }
        buffers.append(try .holding(&slice, connection: connection, context: context, type: VAEncSliceParameterBufferType))
        return buffers
    }

    /// A header writer's result, its failure as the VAError of the picture it was for.
    func written<T>(_ body: () throws(H264WritingError) -> T) throws(VAError) -> T {
        do {
            return try body()
        } catch {
            throw VAError(call: "vaCreateBuffer", status: VAStatus(VA_STATUS_ERROR_OPERATION_FAILED), context: error.description)
        }
    }

    /// A complete NAL unit (escaped) as a packed header: start code + NAL unit, has_emulation_bytes 1.
    func packedHeader(
        _ type: VAEncPackedHeaderType, nalUnit: [UInt8], context: VAContext
    ) throws(VAError) -> [VABufferObject] {
        let data = [0, 0, 0, 1] + nalUnit
        return try packedHeader(type, data: data, bitLength: data.count * 8, hasEmulationBytes: true, context: context)
    }

    func packedHeader(
        _ type: VAEncPackedHeaderType, data: [UInt8], bitLength: Int, hasEmulationBytes: Bool, context: VAContext
    ) throws(VAError) -> [VABufferObject] {
        var parameters = VAEncPackedHeaderParameterBuffer()
        parameters.type = UInt32(type.rawValue)
        parameters.bit_length = UInt32(bitLength)
        parameters.has_emulation_bytes = hasEmulationBytes ? 1 : 0
        let parameterBuffer = try VABufferObject.holding(
            &parameters, connection: connection, context: context, type: VAEncPackedHeaderParameterBufferType)
        let dataBuffer = try data.withUnsafeBytes { raw in
            Result { () throws(VAError) -> VABufferObject in
                try VABufferObject(connection: connection, context: context, type: VAEncPackedHeaderDataBufferType, bytes: raw)
            }
        }.get()
        return [parameterBuffer, dataBuffer]
    }
}
