import Foundation
import SwiftASN1
import X509

/// The root certificates a token's signing chain must end in: the embedded, pinned Apple Root
/// CA - G3 unless `PAYWARDEN_TRUST_ROOTS` (comma-separated PEM or DER files) replaces it, for
/// sandboxes and tests.
public struct TrustAnchors: Sendable {
    public let certificates: [Certificate]
    /// Where the anchors came from, for start-up logs and `token inspect`.
    public let source: String

    public init(certificates: [Certificate], source: String) {
        self.certificates = certificates
        self.source = source
    }

    /// Apple Root CA - G3 alone.
    public static let apple: TrustAnchors = {
        // The embedded bytes are fixed and fingerprint-checked; failing to parse them is a build defect.
        let root = try! Certificate(derEncoded: AppleRootCA.g3)
        return TrustAnchors(certificates: [root], source: "embedded Apple Root CA - G3 (SHA-256 \(AppleRootCA.fingerprint.prefix(16))…)")
    }()

    /// The anchors `PAYWARDEN_TRUST_ROOTS` names, or Apple's when it is unset.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(PaymentTokenError) -> TrustAnchors {
        guard let list = environment["PAYWARDEN_TRUST_ROOTS"], !list.isEmpty else { return .apple }
        return try load(paths: list.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
    }

    /// Reads PEM (one or more CERTIFICATE blocks) or DER files.
    public static func load(paths: [String]) throws(PaymentTokenError) -> TrustAnchors {
        var certificates: [Certificate] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw PaymentTokenError(.certificateChainInvalid, "cannot read trust root \(path) (PAYWARDEN_TRUST_ROOTS)")
            }
            do {
                if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") {
                    for document in try PEMDocument.parseMultiple(pemString: text) where document.discriminator == "CERTIFICATE" {
                        certificates.append(try Certificate(derEncoded: document.derBytes))
                    }
                } else {
                    certificates.append(try Certificate(derEncoded: Array(data)))
                }
            } catch {
                throw PaymentTokenError(.certificateChainInvalid, "trust root \(path) is not a PEM or DER certificate (PAYWARDEN_TRUST_ROOTS)")
            }
        }
        guard !certificates.isEmpty else {
            throw PaymentTokenError(.certificateChainInvalid, "PAYWARDEN_TRUST_ROOTS names no certificate")
        }
        return TrustAnchors(certificates: certificates, source: "PAYWARDEN_TRUST_ROOTS (\(paths.joined(separator: ", ")))")
    }
}
