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
        _ picture: H264CodingPicture<HeldFrame>, qp: Int, reconstructedSlot: Int, codedBuffer: VABufferObject,
        objects: VAEncodeObjects
    ) throws(VAError) -> [VABufferObject] {
        var buffers: [VABufferObject] = []
        let context = objects.context
        let packed = options.packedHeaders
        if picture.type == .idr || sequenceParametersDue {
            // SwiftVT's own SPS, also when the device's (regenerated, maybe without VUI) describes
            // the output: the device is told what SwiftVT wants, every time.
            var sequence = VAH264EncodeParameters.sequence(ownSPS, structure: structure, rateControl: rateControl)
            buffers.append(
                try .holding(
                    &sequence, connection: connection, context: context, type: VAEncSequenceParameterBufferType))
            let qualityLevel = options.qualityLevel(
                realTime: properties.realTime || properties.prioritizeEncodingSpeedOverQuality)
            for (_, bytes) in VAH264EncodeParameters.miscParameters(
                rateControl: rateControl, frameRate: VAH264EncodeParameters.frameRateFraction(frameRate),
                qualityLevel: qualityLevel)
            {
                try bytes.withUnsafeBytes { raw in
                    Result { () throws(VAError) in
                        buffers.append(
                            try VABufferObject(
                                connection: connection, context: context, type: VAEncMiscParameterBufferType, bytes: raw
                            ))
                    }
                }.get()
            }
        }
        var pictureParameters = VAH264EncodeParameters.picture(
            picture, pps: pps, reconstructed: objects.reconstructedSurfaces.ids[reconstructedSlot],
            references: surface(for:), codedBuffer: codedBuffer.id)
        buffers.append(
            try .holding(
                &pictureParameters, connection: connection, context: context, type: VAEncPictureParameterBufferType))
        if picture.type == .idr {
            if packed & UInt32(VA_ENC_PACKED_HEADER_SEQUENCE) != 0 {
                buffers += try packedHeader(
                    VAEncPackedHeaderSequence,
                    nalUnit: try written { () throws(H264WritingError) in try ownSPS.writeNALUnit() }, context: context)
            }
            if packed & UInt32(VA_ENC_PACKED_HEADER_PICTURE) != 0 {
                buffers += try packedHeader(
                    VAEncPackedHeaderPicture,
                    nalUnit: try written { () throws(H264WritingError) in try pps.writeNALUnit() }, context: context)
            }
        }
        if let captions = picture.frame.closedCaptions, packed & UInt32(VA_ENC_PACKED_HEADER_RAW_DATA) != 0 {
            // A/53 captions: an SEI NAL unit of user_data_registered_itu_t_t35 messages (D.1.6)
            // after the parameter sets and before the slices (7.4.1.2.3), in the access unit of
            // the picture they came with.
            buffers += try packedHeader(
                VAEncPackedHeaderRawData,
                nalUnit: H264NALUnitWriter.nalUnit(type: .sei, nalRefIdc: 0, rbsp: captions.seiRBSP), context: context)
        }
        var header = picture.sliceHeader(
            structure: structure, pictureParameterSet: pps, sliceQpDelta: qp - 26 - pps.picInitQpMinus26)
        if !entropyVerified {
            header = try headerShowingEntropyCoding(header)
        }
        var slice = VAH264EncodeParameters.slice(
            picture, header: header, macroblocks: widthInMacroblocks * heightInMacroblocks, references: surface(for:))
        if packed & UInt32(VA_ENC_PACKED_HEADER_SLICE) != 0 {
            let (sps, pps) = (self.sps, self.pps)
            let bits = try written { () throws(H264WritingError) in
                try header.write(sequenceParameterSet: sps, pictureParameterSet: pps)
            }
            // The header as RBSP bits after a start code and the NAL unit header byte; the
            // device appends slice_data() and applies emulation prevention over the whole NAL
            // unit (has_emulation_bytes 0).
            var data: [UInt8] = [
                0, 0, 0, 1, H264NALUnitWriter.headerByte(type: header.nalUnitType, nalRefIdc: header.nalRefIdc)
            ]
            data += bits.bytes
            buffers += try packedHeader(
                VAEncPackedHeaderSlice, data: data, bitLength: 40 + bits.bitCount, hasEmulationBytes: false,
                context: context)
        }
        buffers.append(
            try .holding(&slice, connection: connection, context: context, type: VAEncSliceParameterBufferType))
        return buffers
    }

    /// The first picture's slice header, made to end inside a byte under CABAC: the device's
    /// slice data then starts with cabac_alignment_one_bits (7.3.4) that show whether it really
    /// coded CABAC (readCodedPicture checks them). A device that writes its own slice headers
    /// writes the same fields from the slice parameters, so the same length is likely. A header that would end on a byte boundary
    /// takes an idr_pic_id two bits longer (ue(v) codes 1, 3, 5 ... bits): any value other than
    /// the next IDR picture's will do (7.4.3: consecutive IDR pictures differ), which is the
    /// planner's value for this one plus 1.
    func headerShowingEntropyCoding(_ header: SliceHeader) throws(VAError) -> SliceHeader {
        guard pps.entropyCodingModeFlag, header.idrPicFlag else { return header }
        let (sps, pps) = (self.sps, self.pps)
        var predicted = header
        if options.packedHeaders & UInt32(VA_ENC_PACKED_HEADER_SLICE) == 0 {
            // The device writes the header from the slice parameters, whose slice_type is 0...4.
            predicted.sliceType %= 5
        }
        let bits = try written { () throws(H264WritingError) in
            try predicted.write(sequenceParameterSet: sps, pictureParameterSet: pps)
        }
        guard bits.bitCount % 8 == 0 else { return header }
        var longer = header
        longer.idrPicID = header.idrPicID + 2
        return longer
    }

    /// A header writer's result, its failure as the VAError of the picture it was for.
    func written<T>(_ body: () throws(H264WritingError) -> T) throws(VAError) -> T {
        do {
            return try body()
        } catch {
            throw VAError(
                call: "vaCreateBuffer", status: VAStatus(VA_STATUS_ERROR_OPERATION_FAILED), context: error.description)
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
                try VABufferObject(
                    connection: connection, context: context, type: VAEncPackedHeaderDataBufferType, bytes: raw)
            }
        }.get()
        return [parameterBuffer, dataBuffer]
    }
}
