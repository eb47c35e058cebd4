/// Hides the secrets of a decrypted payload (PAN, cryptogram, EMV data, PIN block,
/// authentication data) for display, keeping its shape and every other field.
public enum PaymentDataMasking {
    /// Fields masked wherever they occur.
    static let secretFields: Set<[UInt8]> = Set(
        ["onlinePaymentCryptogram", "emvData", "encryptedPINData", "authenticationData"].map { Array($0.utf8) })
    static let accountNumberField = Array("applicationPrimaryAccountNumber".utf8)

    /// The payload with secrets masked, as canonical JSON (members sorted, `/` unescaped): the PAN
    /// keeps its last four digits. Read by the strict reader the tokens use; nil unless a JSON object.
    public static func masked(_ paymentData: [UInt8]) -> [UInt8]? {
        guard let object = try? TokenJSON.object(paymentData) else { return nil }
        var output: [UInt8] = []
        mask(.object(object), name: nil).writeCanonical(to: &output)
        return output
    }

    /// A PAN with all but its last four digits replaced.
    public static func maskedPAN(_ pan: String) -> String {
        String(repeating: "*", count: max(pan.count - 4, 0)) + pan.suffix(4)
    }

    /// A string under a secret's name is masked, also as an array's element.
    private static func mask(_ value: TokenJSON.Value, name: [UInt8]?) -> TokenJSON.Value {
        switch value {
        case .object(var object):
            for index in object.members.indices {
                object.members[index].value = mask(object.members[index].value, name: object.members[index].name)
            }
            return .object(object)
        case .array(let elements):
            return .array(elements.map { mask($0, name: name) })
        case .string(let bytes):
            guard let name else { return value }
            let text = String(decoding: bytes, as: UTF8.self)
            if name == accountNumberField { return .string(Array(maskedPAN(text).utf8)) }
            if secretFields.contains(name) { return .string(Array("<masked \(text.count) characters>".utf8)) }
            return value
        default:
            return value
        }
    }
}
