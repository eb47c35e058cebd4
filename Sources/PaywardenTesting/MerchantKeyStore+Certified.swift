import Crypto
import Foundation
import KeyCustody
import PaywardenSandbox

extension MerchantKeyStore {
    /// A processing key for `merchantID` as an admin makes one: generated in the HSM, its CSR
    /// certified by the test CA, the certificate imported (the key active).
    public func certifiedProcessingKey(merchantID: String, _ type: KeyAlgorithmChoice) async throws -> MerchantKey {
        let (_, csr) = try await create(merchantID: merchantID, purpose: .processing, algorithm: type)
        let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        return try await importCertificate(MerchantCertificate(bytes: certificate)).key
    }
}

extension TokenForge {
    /// An EC_v1 token signed by the test PKI, encrypted to `merchant`'s key, with its publicKeyHash.
    public func ecToken(to merchant: MerchantKey, payload: [UInt8], options: Options = .init()) throws -> [UInt8] {
        guard case .ecP256(let point) = merchant.key.publicKey, let merchantID = merchant.merchantID else {
            throw CocoaError(.featureUnsupported)
        }
        return try ecV1(
            payload: payload, merchant: .init(x963Representation: point),
            merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchantID),
            options: options
        )
        .withPublicKeyHash(merchant.publicKeyHash)
    }
}
