/// An RFC 7512 `pkcs11:` URI, reduced to the attributes that name a token, an object or a module.
///
/// `pin-value` is refused: a PIN must not travel in a URI that may end up in argv or a log.
public struct PKCS11URI: Sendable, Hashable {
    public var token: String?
    public var manufacturer: String?
    public var serial: String?
    public var model: String?
    public var object: String?
    public var id: KeyIdentifier?
    public var type: String?
    public var modulePath: String?
    public var pinSource: String?

    public init(_ text: String) throws(PKCS11Error) {
        guard text.hasPrefix("pkcs11:") else { throw .invalidInput("a PKCS#11 URI starts with \"pkcs11:\"") }
        let body = text.dropFirst("pkcs11:".count)
        let parts = body.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        for attribute in (parts.first ?? "").split(separator: ";") {
            let (name, raw) = try Self.pair(attribute)
            let value = String(decoding: try Self.decodeBytes(raw), as: UTF8.self)
            switch name {
            case "token": token = value
            case "manufacturer": manufacturer = value
            case "serial": serial = value
            case "model": model = value
            case "object": object = value
            case "type": type = value
            case "id": id = KeyIdentifier(bytes: try Self.decodeBytes(raw))
            default: break  // RFC 7512: unknown path attributes are ignored
            }
        }
        if parts.count == 2 {
            for attribute in parts[1].split(separator: "&") {
                let (name, raw) = try Self.pair(attribute)
                let value = String(decoding: try Self.decodeBytes(raw), as: UTF8.self)
                switch name {
                case "module-path": modulePath = value
                case "pin-source": pinSource = value
                case "pin-value": throw .invalidInput("pin-value is not accepted in a PKCS#11 URI; name a PIN file with pin-source=file:…")
                default: break
                }
            }
        }
    }

    private static func pair(_ attribute: Substring) throws(PKCS11Error) -> (name: String, raw: String) {
        let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard pieces.count == 2 else { throw .invalidInput("PKCS#11 URI attribute \"\(attribute)\" has no value") }
        return (String(pieces[0]), String(pieces[1]))
    }

    /// Percent-decoding, as RFC 3986 defines it.
    private static func decodeBytes(_ text: String) throws(PKCS11Error) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { throw .invalidInput("bad percent-encoding in PKCS#11 URI") }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return bytes
    }
}
