extension Double {
    /// The value with `digits` decimals, rounded half away from zero, for messages and logs
    /// (no Foundation here for String(format:)): 2.0.decimalText(digits: 2) is "2.00".
    public func decimalText(digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<max(0, digits) { scale *= 10 }
        guard (self * scale).isFinite, abs(self * scale) < 9e18 else { return "\(self)" }
        let scaled = Int((self * scale).rounded())
        guard digits > 0 else { return "\(scaled)" }
        let whole = scaled / Int(scale)
        var fraction = "\(abs(scaled) % Int(scale))"
        while fraction.count < digits { fraction = "0" + fraction }
        return "\(scaled < 0 && whole == 0 ? "-" : "")\(whole).\(fraction)"
    }
}
