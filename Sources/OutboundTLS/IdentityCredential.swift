import KeyCustody
import PKCS11

/// The identity key and certificate chosen for a merchant: the TLS client certificate, whose
/// private key signs the handshake inside the HSM.
public struct IdentityCredential: Sendable {
    public let merchantID: String
    public let keyID: KeyIdentifier
    public let certificate: MerchantCertificate

    public init(merchantID: String, keyID: KeyIdentifier, certificate: MerchantCertificate) {
        self.merchantID = merchantID
        self.keyID = keyID
        self.certificate = certificate
    }
}
