import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing

extension HSMTests {
    @Suite struct ErrorMapping {
        @Test func wrongPINIsAMisconfigurationThatSaysSo() async throws {
            let token = try await TestToken.make()
            let wrongPIN = token.directory + "/wrong.pin"
            try OwnerOnlyFile.write("000000", to: wrongPIN)
            let error = await #expect(throws: PKCS11Error.self) { try await token.open { $0.pin = .file(wrongPIN) } }
            #expect(error?.returnValue == .pinIncorrect)
            #expect(error?.category == .misconfiguration)
            #expect(error?.description.contains("refused the user PIN") == true)
            #expect(error?.description.contains("000000") == false)
            // The layer speaks Cryptoki: advice naming Paywarden's settings is its callers' to add.
            #expect(error?.description.contains("PAYWARDEN") == false)
        }

        @Test func missingModuleTokenAndPINFile() async throws {
            let token = try await TestToken.make()
            let module = await #expect(throws: PKCS11Error.self) { try await token.open { $0.modulePath = "/nonexistent/libpkcs11.so" } }
            #expect(module?.code == .moduleNotFound)
            #expect(module?.message.contains("/nonexistent/libpkcs11.so") == true)
            #expect(module?.message.contains("PAYWARDEN") == false)
            let notAModule = await #expect(throws: PKCS11Error.self) { try await token.open { $0.modulePath = "/etc/hostname" } }
            #expect(notAModule?.code == .moduleInvalid)
            let missing = await #expect(throws: PKCS11Error.self) { try await token.open { $0.tokenLabel = "no-such-token" } }
            #expect(missing?.code == .tokenNotFound)
            #expect(missing?.message.contains(token.label) == true)
            let noPIN = await #expect(throws: PKCS11Error.self) { try await token.open { $0.pin = .file("/nonexistent/pin") } }
            #expect(noPIN?.code == .pinUnavailable)
        }

        @Test func offCurvePointIsBadInputNotAnHSMFailure() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "m", algorithm: .ecP256, usage: [.derive]))
            var point = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            point[64] ^= 0x01
            let offCurve = point
            let validated = await #expect(throws: PKCS11Error.self) {
                try await hsm.deriveConcatenationKDFKey(key.id, peerPoint: offCurve, otherInfo: [])
            }
            #expect(validated?.category == .badInput)
            // Straight to the module, SoftHSM answers CKR_GENERAL_ERROR (NSS softokn CKR_KEY_SIZE_RANGE);
            // the layer still calls it bad input.
            let raw = await #expect(throws: PKCS11Error.self) {
                try await hsm.withSession { session throws(PKCS11Error) in
                    let handle = try session.findObjects([.objectClass(.privateKey), .id(key.id)]).first!
                    return try session.deriveConcatenationKDFKey(path: .digestKey, privateKey: handle, peerPoint: offCurve, otherInfo: [])
                }
            }
            #expect(raw?.returnValue == (token.backend == .softHSM ? .generalError : .keySizeRange))
            #expect(raw?.category == .badInput)
            // A P-384 point is the wrong curve.
            let p384 = Array(P384.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let wrongCurve = await #expect(throws: PKCS11Error.self) {
                try await hsm.deriveConcatenationKDFKey(key.id, peerPoint: p384, otherInfo: [])
            }
            #expect(wrongCurve?.category == .badInput)
            await hsm.close()
        }

        @Test func keyWithoutDerivePermissionIsRefused() async throws {
            let hsm = try await TestToken.make().open()
            let signer = try await hsm.generateKeyPair(KeySpecification(label: "sign-only", algorithm: .ecP256, usage: [.sign]))
            let error = await #expect(throws: PKCS11Error.self) {
                try await hsm.deriveConcatenationKDFKey(
                    signer.id, peerPoint: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), otherInfo: [])
            }
            #expect(error?.returnValue == .keyFunctionNotPermitted)
            let unknown = await #expect(throws: PKCS11Error.self) {
                try await hsm.signECDSA(KeyIdentifier.random(), digest: [UInt8](repeating: 0, count: 32))
            }
            #expect(unknown?.code == .keyNotFound)
            await hsm.close()
        }

        @Test func tokenInitializationIsIdempotent() async throws {
            let token = try await TestToken.make()
            let again = try await TokenInitializer.ensureToken(
                modulePath: token.modulePath, initReserved: token.initReserved, label: token.label,
                securityOfficerPIN: Array("x".utf8), userPIN: Array("y".utf8)
            )
            guard case .alreadyPresent(let info) = again else {
                Issue.record("re-created")
                return
            }
            #expect(info.label == token.label)
            #expect(info.isUserPINInitialized)
        }
    }
}

@Suite struct ConfigurationParsing {
    @Test func everyReturnValueHasANameAndCategory() {
        #expect(ReturnValue.pinIncorrect.name == "CKR_PIN_INCORRECT")
        #expect(ReturnValue.pinIncorrect.category == .misconfiguration)
        #expect(ReturnValue.userNotLoggedIn.category == .relogin)
        #expect(ReturnValue.deviceError.category == .retry)
        #expect(ReturnValue.encryptedDataInvalid.category == .badInput)
        #expect(ReturnValue(rawValue: 0x8000_0001).name == "CKR_VENDOR_DEFINED+0x1")
    }

    @Test func aPKCS11URINamesTheTokenModuleAndPINFile() throws {
        var configuration = HSMConfiguration(modulePath: "/opt/hsm/lib.so", tokenLabel: "x", pin: .missing)
        try configuration.setToken("pkcs11:token=pay%20warden;object=k?module-path=/opt/other.so&pin-source=file:/run/pin")
        #expect(configuration.tokenLabel == "pay warden")
        #expect(configuration.modulePath == "/opt/other.so")
        guard case .file(let path) = configuration.pin else {
            Issue.record("the PIN source is not the file")
            return
        }
        #expect(path == "/run/pin")
        #expect(!configuration.allowExtractableSharedSecret)
        #expect(throws: PKCS11Error.self) { try PKCS11URI("pkcs11:token=a?pin-value=1234") }
        #expect(try PKCS11URI("pkcs11:id=%01%ff").id == KeyIdentifier(bytes: [1, 255]))
        #expect(throws: PKCS11Error.self) { try configuration.setToken("pkcs11:token=a?pin-source=https://example.com/pin") }
    }

    @Test func pinFilesLoseOnlyTheirLineBreak() throws {
        let path = NSTemporaryDirectory() + "pin-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (contents, expected) in [("1234\r\n", "1234"), ("1234\n", "1234"), (" 12 34 ", " 12 34 ")] {
            try OwnerOnlyFile.write(contents, to: path)
            #expect(try PINSource.file(path).read() == Array(expected.utf8))
        }
        try OwnerOnlyFile.write("\r\n", to: path)
        #expect(throws: PKCS11Error.self) { try PINSource.file(path).read() }
        #expect(throws: PKCS11Error.self) { try PINSource.missing.read() }
    }
}
