import Crypto
import Foundation
import PaywardenPrimitives
import X509

/// A CA certificate compiled into Paywarden and pinned by the SHA-256 fingerprint of its DER, as
/// Apple publishes it on its certificate-authority page. The same file is in `Keys/trust/`.
public struct PinnedCertificate: Sendable {
    /// What Apple calls it.
    public let name: String
    /// SHA-256 of the DER certificate, uppercase hex.
    public let fingerprint: String
    public let der: [UInt8]
    public let certificate: Certificate

    /// Decodes `base64` and checks it against `fingerprint`.
    init(name: String, fingerprint: String, base64: String) {
        self.init(name: name, fingerprint: fingerprint, der: Array(Data(base64Encoded: base64, options: .ignoreUnknownCharacters)!))
    }

    /// Checks `der` against `fingerprint`: a mismatch or an unreadable certificate is a build
    /// defect, not something an operator can cause.
    init(name: String, fingerprint: String, der: [UInt8]) {
        let digest = Hex.encode(Array(SHA256.hash(data: der))).uppercased()
        precondition(digest == fingerprint, "the embedded \(name) does not match its pinned fingerprint")
        self.name = name
        self.fingerprint = fingerprint
        self.der = der
        self.certificate = try! Certificate(derEncoded: der)
    }
}
