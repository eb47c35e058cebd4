import Foundation
import PKCS11
import SwiftASN1
import X509

/// Builds the PEM certificate signing request an admin uploads to Apple, signed by the HSM.
public enum CertificateRequestBuilder {
    public static func pem(hsm: HSM, key: KeyObject, merchantID: String) async throws -> String {
        let signer = try HSMSigningKey(hsm: hsm, key: key)
        // Apple replaces the subject with its own; the merchant identifier helps admins tell CSRs apart.
        let subject = try DistinguishedName {
            CommonName(merchantID)
        }
        let request = try await CertificateSigningRequest(
            version: .v1,
            subject: subject,
            asyncPrivateKey: Certificate.PrivateKey(signer),
            attributes: CertificateSigningRequest.Attributes(),
            signatureAlgorithm: signer.defaultSignatureAlgorithm
        )
        return try request.serializeAsPEM().pemString + "\n"
    }
}
