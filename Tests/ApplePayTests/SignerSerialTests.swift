import ApplePay
import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The signer's identifier (issuer and serial) sits outside what the signature covers, so anyone
/// relaying a token can re-encode it. X.690 §8.3.2 allows one encoding of an INTEGER, in BER as in
/// DER: a serial padded with zero octets is not valid CMS, and is refused whatever the padding,
/// before it reaches the chain cache.
@Suite(.serialized, .releasesTestResources)
struct SignerSerialTests {
    @Test func paddedSignerSerialsAreRefusedAndLeaveTheChainCacheAtOneEntry() async throws {
        let env = try await DecryptionTestEnvironment(.software)
        let merchant = try await env.merchant("merchant.com.example.serials")
        let genuine = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant))
        #expect(genuine.keyID == merchant.keyID)
        #expect(env.decrypter.verifier.cachedChainCount == 1)

        // More paddings than the cache holds (256): accepted, each would be a new entry and flush it.
        var codes: [PaymentTokenError.Code: Int] = [:]
        for padding in 1...300 {
            var options = TokenForge.Options()
            options.signerSerialPadding = padding
            let token = try env.ecToken(to: merchant, options: options)
            do {
                _ = try await env.decrypter.decrypt(json: token)
                Issue.record("a serial padded with \(padding) zero octets was accepted")
            } catch {
                codes[error.code, default: 0] += 1
                if padding == 1 { #expect(error.message.contains("not minimally encoded"), "\(error.message)") }
            }
        }
        #expect(codes == [.signatureInvalid: 300])
        #expect(env.decrypter.verifier.cachedChainCount == 1)
        // The genuine chain's verdict is still there and still used.
        _ = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant))
        #expect(env.decrypter.verifier.cachedChainCount == 1)
        await env.close()
    }
}
