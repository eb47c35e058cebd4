import Foundation
import PKCS11
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The PKCS#11 layer says what failed in Cryptoki's terms; the advice an operator reads, naming
/// the settings to change, is added above it.
@Suite(.serialized, .releasesTestResources)
struct OperatorAdviceTests {
    @Test func aRefusedPINNamesThePINSettingsAndSaysItIsNotRetried() async throws {
        let token = try await TestToken.make()
        let wrongPIN = token.directory + "/wrong-\(UUID().uuidString.prefix(6)).pin"
        try OwnerOnlyFile.write("000000", to: wrongPIN)
        defer { try? FileManager.default.removeItem(atPath: wrongPIN) }
        let error = await #expect(throws: PKCS11Error.self) { try await token.open { $0.pin = .file(wrongPIN) } }
        let advice = try OperatorAdvice.describe(#require(error))
        #expect(advice.contains("CKR_PIN_INCORRECT"))
        #expect(advice.contains("PAYWARDEN_PIN_FILE"))
        #expect(advice.contains("does not retry"))
        #expect(!advice.contains("000000"))
    }

    @Test func aMissingModuleOrTokenSaysWhichSettingToChange() async throws {
        let token = try await TestToken.make()
        let module = await #expect(throws: PKCS11Error.self) { try await token.open { $0.modulePath = "/nonexistent/libpkcs11.so" } }
        #expect(try OperatorAdvice.describe(#require(module)).contains("PAYWARDEN_PKCS11_MODULE"))
        let missing = await #expect(throws: PKCS11Error.self) { try await token.open { $0.tokenLabel = "no-such-token" } }
        let advice = try OperatorAdvice.describe(#require(missing))
        #expect(advice.contains("PAYWARDEN_TOKEN_LABEL"))
        #expect(advice.contains("dev-hsm init"))
    }
}
