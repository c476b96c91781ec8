import MediaCore

/// Session-layer messages speak the Swift API (`hardwarePolicy .require`, `pixelFormats`,
/// four-character pixel format codes); a GStreamer user sets element properties and reads caps, so
/// messages on the bus use those names.
enum SessionWording {
    static func gstreamer(_ text: String) -> String {
        var result = text
        for (swiftName, propertyName) in [
            ("hardwarePolicy .require", "hardware=require"), ("hardwarePolicy .auto", "hardware=auto"),
            ("hardwarePolicy .disable", "hardware=disable"),
            ("add one of those to pixelFormats", "let downstream accept one of those (video/x-raw caps)"),
            ("pixelFormats", "the formats downstream accepts"),
            ("use .cavlc or nil", "use entropy-mode=cavlc or auto")
        ] {
            result = result.replacing(swiftName, with: propertyName)
        }
        // Four-character codes as PixelFormat prints them ('I410', y420) -> GStreamer format names.
        for format in PixelFormat.allSupported {
            guard let gstreamerName = VideoFormatMapping.gstreamerName(for: format) else { continue }
            let code = format.rawValue.description
            result = result.replacing("'\(code)'", with: gstreamerName)
            result = result.replacing(wholeWord: code, with: gstreamerName)
        }
        return result
    }
}

extension String {
    /// Replaces `word` where it is not part of a longer word (letters, digits, '_').
    fileprivate func replacing(wholeWord word: String, with replacement: String) -> String {
        guard !word.isEmpty, contains(word) else { return self }
        func isWordCharacter(_ character: Character?) -> Bool {
            guard let character else { return false }
            return character.isLetter || character.isNumber || character == "_"
        }
        var output = ""
        var rest = self[...]
        while let range = rest.firstRange(of: word) {
            let before = range.lowerBound == rest.startIndex ? output.last : rest[rest.index(before: range.lowerBound)]
            let after = range.upperBound == rest.endIndex ? nil : rest[range.upperBound]
            output += rest[..<range.lowerBound]
            output += isWordCharacter(before) || isWordCharacter(after) ? word : replacement
            rest = rest[range.upperBound...]
        }
        return output + rest
    }
}
