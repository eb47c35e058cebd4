import Crypto
import Foundation
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// What each key `paywarden keys create` makes may do in the HSM: a processing key signs its own
/// CSR and nothing after, an identity or upstream key keeps signing (TLS client authentication).
@Suite(.serialized, .releasesTestResources)
struct KeyUsageTests {
    /// Creates a key through the CLI and returns its id.
    func create(_ env: AdminTestEnvironment, purpose: String, type: String) throws -> KeyIdentifier {
        let output = try env.paywarden(
            "keys", "create", "--merchant-id", "merchant.com.usage", "--purpose", purpose, "--type", type,
            "--csr-out", env.home + "/\(purpose)-\(type).csr", "--json")
        #expect(output.status == 0, "\(output.stderr)")
        return try #require(KeyIdentifier(hex: try AdminTestEnvironment.key(in: output).id))
    }

    /// CKA_SIGN of the token's private key `id`, and what C_SignInit says when the key is used to sign.
    func signing(_ hsm: HSM, _ id: KeyIdentifier, rsa: Bool) async throws -> (attribute: [UInt8]?, error: PKCS11Error?) {
        try await hsm.withSession { session throws(PKCS11Error) -> ([UInt8]?, PKCS11Error?) in
            let handle = try session.tokenObjects(.privateKey, id: id)[0]
            let attribute = try session.attributes(of: handle, [.sign])[.sign]
            do throws(PKCS11Error) {
                if rsa {
                    _ = try session.signRSAPKCS1SHA256(privateKey: handle, message: Array("m".utf8))
                } else {
                    _ = try session.signECDSA(privateKey: handle, digest: Array(SHA256.hash(data: Data("m".utf8))))
                }
                return (attribute, nil)
            } catch {
                return (attribute, error)
            }
        }
    }

    @Test(arguments: ["ec", "rsa"])
    func aProcessingKeyCannotSignOnceItsCSRIsMade(type: String) async throws {
        let env = try await AdminTestEnvironment.make()
        let id = try create(env, purpose: "processing", type: type)
        // The CSR itself was signed by the key and verifies.
        let csr = try String(contentsOfFile: env.home + "/processing-\(type).csr", encoding: .utf8)
        #expect(csr.contains("BEGIN CERTIFICATE REQUEST"))

        let hsm = try await env.token.open()
        let (attribute, error) = try await signing(hsm, id, rsa: type == "rsa")
        #expect(attribute == [0], "CKA_SIGN must be FALSE on the processing key")
        #expect(error?.function == "C_SignInit", "\(String(describing: error))")
        // SoftHSM answers CKR_KEY_FUNCTION_NOT_PERMITTED, NSS softokn CKR_KEY_TYPE_INCONSISTENT.
        #expect([.keyFunctionNotPermitted, .keyTypeInconsistent].contains(error?.returnValue), "\(String(describing: error))")
        let key = try await hsm.key(id)
        #expect(!key.usage.contains(.sign))
        #expect(key.usage.contains(type == "rsa" ? .decrypt : .derive))
        await hsm.close()
    }

    /// Identity keys sign TLS handshakes to Apple, upstream keys to a processor: both keep
    /// CKA_SIGN, and neither decrypts nor leaves the HSM.
    @Test(arguments: ["identity", "upstream"])
    func aTLSClientKeyStillSigns(purpose: String) async throws {
        let env = try await AdminTestEnvironment.make()
        let id = try create(env, purpose: purpose, type: "rsa")
        let hsm = try await env.token.open()
        let (attribute, error) = try await signing(hsm, id, rsa: true)
        #expect(attribute == [1])
        #expect(error == nil, "\(String(describing: error))")
        #expect(try await hsm.signRSAPKCS1SHA256(id, message: Array("client hello".utf8)).count == 256)
        let flags = try await hsm.withSession { session throws(PKCS11Error) -> [AttributeType: [UInt8]] in
            let handle = try session.tokenObjects(.privateKey, id: id)[0]
            return try session.attributes(of: handle, [.sensitive, .extractable, .decrypt])
        }
        #expect(flags[.sensitive] == [1] && flags[.extractable] == [0] && flags[.decrypt] == [0], "\(flags)")
        await hsm.close()
    }
}
