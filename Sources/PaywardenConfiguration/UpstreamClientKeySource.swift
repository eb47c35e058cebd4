import Foundation

/// Where the private key of an upstream's TLS client certificate is: a key in Paywarden's HSM
/// (created with `paywarden keys create --purpose upstream`), or a PEM file as before.
///
/// The `*_client_key` setting takes either, so a deployment that names a PEM file keeps working:
/// a `pkcs11:` URI (RFC 7512) with the key's `id`, or the bare key id in hex as `paywarden keys
/// list` prints it, names an HSM key; anything else is a file path (write `./NAME` for a file
/// whose name is all hex digits).
public enum UpstreamClientKeySource: Sendable, Hashable {
    /// The key's `CKA_ID`, lowercase hex.
    case hsm(keyID: String)
    case pemFile(path: String)

    /// Parses the setting's value; a `pkcs11:` URI without a usable `id`, or with a PIN in it,
    /// refuses the start.
    static func parse(_ text: String, setting: Setting) throws(ConfigurationError) -> Self {
        if text.lowercased().hasPrefix("pkcs11:") { return .hsm(keyID: try keyID(inURI: text, setting: setting)) }
        if isHex(text) { return .hsm(keyID: text.lowercased()) }
        return .pemFile(path: text)
    }

    /// The `id` path attribute of a PKCS#11 URI: percent-encoded bytes (`%a1%b2…`) as the RFC
    /// writes them, or plain hex. Other path attributes (`token`, `object`, `type`, …) are allowed
    /// and ignored: the token is Paywarden's configured one, and the id alone names the key.
    private static func keyID(inURI text: String, setting: Setting) throws(ConfigurationError) -> String {
        let expected = "a pkcs11: URI with the key's id (pkcs11:id=%01%02…), a key id in hex, or a PEM file"
        let body = text.dropFirst("pkcs11:".count)
        // A query carries pin-value or pin-source: the PIN comes from its file, never from a setting's text.
        guard !body.contains("?") else {
            throw ConfigurationError(
                "\(setting.environmentName) is a pkcs11: URI with a query (pin-value, pin-source, module-path …): the HSM is "
                    + "Paywarden's configured one and its PIN comes from \(SettingCatalog.pinFile.environmentName); give only the key's id")
        }
        var identifiers: [String] = []
        for attribute in body.split(separator: ";") {
            let parts = attribute.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ConfigurationError(setting, value: text, expected: expected) }
            if parts[0] == "id" { identifiers.append(parts[1]) }
        }
        guard identifiers.count == 1, let hex = hexOfPercentEncoded(identifiers[0]) ?? (isHex(identifiers[0]) ? identifiers[0] : nil)
        else { throw ConfigurationError(setting, value: text, expected: expected) }
        return hex.lowercased()
    }

    /// `%a1%b2…` as hex (`a1b2…`); nil unless the text is only percent-encoded octets.
    private static func hexOfPercentEncoded(_ text: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty, scalars.count % 3 == 0 else { return nil }
        var hex = ""
        for index in stride(from: 0, to: scalars.count, by: 3) {
            guard scalars[index] == "%" else { return nil }
            let octet = String(String.UnicodeScalarView(scalars[index + 1...index + 2]))
            guard isHex(octet) else { return nil }
            hex += octet
        }
        return hex
    }

    /// A non-empty, even number of hex digits: what a key id looks like.
    private static func isHex(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 2 == 0 && text.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isASCIIHexDigit }
    }
}
