import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing
@_spi(FixedExpiryValidationTime) import X509

/// Imported certificates are checked when they are imported: they must chain to the pinned issuer
/// of their purpose (or to the issuers configuration puts in its place) and carry SHA-256 of the
/// merchant identifier in extension .6.32. A refusal leaves the HSM as it was.
@Suite(.serialized, .releasesTestResources)
struct CertificateIssuerTests {
    /// The vectors that publish a merchant certificate, with the key file and its password. The
    /// PKCS#12 of maxgui-stage-ec-2015 has the empty password in its NULL form (no password octets
    /// at all, as macOS writes it), which "" must also open.
    static let vectorCertificates: [(vector: String, key: String?, password: String?)] = [
        ("gala-2014", "merchant_key.pem", nil), ("gala-2021", "merchant_key.pem", nil),
        ("basistheory-ec-old", "merchant_key.pem", nil), ("basistheory-ec-new", "merchant_key.pem", nil),
        ("basistheory-rsa", "merchant_key.pem", nil), ("maxgui-stage-ec-2015", "merchant.p12", ""),
        ("maxgui-stage-rsa-emv-2016", "merchant.p12", "123456"),
    ]

    static func repositoryFile(_ path: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The compiled-in authorities are the files in Keys/trust, match the fingerprints Apple
    /// publishes, and each WWDR CA verifies under its root.
    @Test func pinnedAuthoritiesMatchKeysTrustAndChainToTheirRoots() async throws {
        typealias A = AppleCertificateAuthorities
        for (file, pinned) in [
            ("Keys/trust/AppleWWDRCAG2.pem", A.wwdrG2), ("Keys/trust/AppleWWDRCAG3.pem", A.wwdrG3), ("Keys/trust/AppleRootCA.pem", A.root),
            ("Keys/trust/AppleRootCA-G3.pem", A.rootG3),
        ] {
            let body = try Self.repositoryFile(file).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let der = Array(try #require(Data(base64Encoded: body), "\(file)"))
            #expect(der == pinned.der, "\(file)")
            #expect(SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined() == pinned.fingerprint, "\(file)")
        }
        #expect(A.wwdrG2.fingerprint == "9ED4B3B88C6A339CF1387895BDA9CA6EA31A6B5CE9EDF7511845923B0C8AC94C")
        #expect(A.wwdrG3.fingerprint == "DCF21878C77F4198E4B4614F03D696D89C66C66008D4244E1B99161AAC91601F")
        #expect(A.root.fingerprint == "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024")
        // Both WWDR CAs are valid on 2025-01-01; each verifies under its own root and not the other's.
        let when = Date(timeIntervalSince1970: 1_735_689_600)
        for (intermediate, root, other) in [(A.wwdrG2, A.rootG3, A.root), (A.wwdrG3, A.root, A.rootG3)] {
            var verifier = Verifier(rootCertificates: CertificateStore([root.certificate])) {
                RFC5280Policy(fixedExpiryValidationTime: when)
            }
            let result = await verifier.validate(leaf: intermediate.certificate, intermediates: CertificateStore([]))
            guard case .validCertificate(let chain) = result else {
                Issue.record("\(intermediate.name) does not verify under \(root.name): \(result)")
                continue
            }
            #expect(chain.count == 2)
            var wrong = Verifier(rootCertificates: CertificateStore([other.certificate])) { RFC5280Policy(fixedExpiryValidationTime: when) }
            guard case .couldNotValidate = await wrong.validate(leaf: intermediate.certificate, intermediates: CertificateStore([])) else {
                Issue.record("\(intermediate.name) verifies under \(other.name)")
                continue
            }
        }
    }

    /// Every real certificate Apple issued in the vectors imports under the pinned issuers (as of a
    /// moment it was valid), and the same certificate is refused when the issuers are another CA.
    @Test(arguments: vectorCertificates.map(\.vector))
    func everyRealVectorCertificateChainsToThePinnedProcessingIssuer(vector: String) async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let entry = try #require(Self.vectorCertificates.first { $0.vector == vector })
        let certificate = try MerchantCertificate(bytes: Array(try ConformanceVectors.data(vector, "merchant_cert.pem")))
        let midpoint = certificate.notValidBefore.addingTimeInterval(
            certificate.notValidAfter.timeIntervalSince(certificate.notValidBefore) / 2)
        try await CertificateIssuers.apple.verify(certificate.certificate, purpose: .processing, at: midpoint)
        await expectUntrusted("does not chain to Apple Worldwide Developer Relations Certification Authority - G3 under Apple Root CA") {
            try await CertificateIssuers.apple.verify(certificate.certificate, purpose: .identity, at: midpoint)
        }
        #expect(certificate.merchantIdentifierHash == MerchantKeyStore.merchantIdentifierHash(try #require(certificate.merchantID)))
        guard let keyFile = entry.key else { return }
        let keyBytes = Array(try ConformanceVectors.data(vector, keyFile))
        let software =
            try entry.password.map { try SoftwarePrivateKey(pkcs12: keyBytes, password: $0) } ?? SoftwarePrivateKey(pemOrDER: keyBytes)
        let hsm = try await TestToken.make().open()

        let elsewhere = MerchantKeyStore(
            hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: TestCertificateAuthority.shared.issuers, clock: { midpoint })
        await expectUntrusted("does not chain to the test CA") {
            _ = try await elsewhere.importKey(software, certificate: certificate, merchantID: nil, purpose: .processing)
        }
        #expect(try await elsewhere.list().isEmpty, "nothing stored")

        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), clock: { midpoint })
        let key = try await store.importKey(software, certificate: certificate, merchantID: nil, purpose: .processing)
        #expect(key.state == .active)
        #expect(key.merchantID == certificate.merchantID)
        #expect(key.record.merchantIdentifierHash == MerchantKeyStore.merchantIdentifierHash(try #require(certificate.merchantID)))
        await hsm.close()
    }

    /// An expired certificate, allowed for old tokens, must still have come from the issuer while
    /// it was valid: its chain is checked as of its last valid moment.
    @Test func anAllowedExpiredCertificateIsCheckedAsOfItsLastValidMoment() async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm))
        let certificate = try MerchantCertificate(bytes: Array(try ConformanceVectors.data("gala-2014", "merchant_cert.pem")))
        let software = try SoftwarePrivateKey(pemOrDER: Array(try ConformanceVectors.data("gala-2014", "merchant_key.pem")))
        await expectError(.certificateExpired, "the certificate expired on") {
            _ = try await store.importKey(software, certificate: certificate, merchantID: nil, purpose: .processing)
        }
        let key = try await store.importKey(
            software, certificate: certificate, merchantID: nil, purpose: .processing, allowExpiredCertificate: true)
        #expect(key.state == .active)

        // A test CA created now did not exist when a certificate that expired ten days ago was
        // valid: allowed or not, that chain never held.
        let ca = try TestCertificateAuthority()
        let trusting = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers)
        let day: TimeInterval = 86_400
        let staleSigningKey = P256.Signing.PrivateKey()
        let staleKey = try SoftwarePrivateKey(pemOrDER: Array(staleSigningKey.pemRepresentation.utf8))
        let stale = try MerchantCertificate(
            bytes: try ca.issue(
                publicKey: .init(staleSigningKey.publicKey), merchantID: "merchant.com.example.stale", purpose: .processing,
                notBefore: Date().addingTimeInterval(-400 * day), notAfter: Date().addingTimeInterval(-10 * day)))
        await expectUntrusted("does not chain to the test CA") {
            _ = try await trusting.importKey(
                staleKey, certificate: stale, merchantID: nil, purpose: .processing, allowExpiredCertificate: true)
        }
        // Within the CA's validity (it began two days ago), the same allowance imports it.
        let recent = try MerchantCertificate(
            bytes: try ca.issue(
                publicKey: .init(staleSigningKey.publicKey), merchantID: "merchant.com.example.stale", purpose: .processing,
                notBefore: Date().addingTimeInterval(-30 * day), notAfter: Date().addingTimeInterval(-day)))
        #expect(
            try await trusting.importKey(
                staleKey, certificate: recent, merchantID: nil, purpose: .processing, allowExpiredCertificate: true
            )
            .state == .active)
        await hsm.close()
    }

    /// A certificate valid today from an issuer that has expired by then is refused.
    @Test func anExpiredIssuerIsRefused() async throws {
        let ca = try TestCertificateAuthority()
        let year: TimeInterval = 365 * 86_400
        let later = Date().addingTimeInterval(11 * year)  // the test CA lasts ten years
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers, clock: { later })
        let (key, csr) = try await store.create(merchantID: "merchant.com.example.late", purpose: .processing, algorithm: .ec)
        let certificate = try ca.issue(
            csrPEM: csr, merchantID: "merchant.com.example.late", purpose: .processing, notBefore: later.addingTimeInterval(-86_400))
        await expectUntrusted("does not chain to the test CA") {
            _ = try await store.importCertificate(MerchantCertificate(bytes: certificate))
        }
        #expect(try await store.key(key.id.hex).state == .pending)
        await hsm.close()
    }

    /// Another CA, even one with the same name, and a hash that is not that of the key's merchant
    /// (or none at all) are refused in the test process too, with the key left pending.
    // Apple's purposes: an upstream key's certificate is the processor's, not checked against
    // issuers (LifecycleTests.upstreamKeysAreRSAAndTakeTheProcessorsCertificate).
    @Test(arguments: [KeyPurpose.processing, .identity])
    func foreignCAAndWrongOrMissingHashAreRefused(purpose: KeyPurpose) async throws {
        let ca = try TestCertificateAuthority()
        let impostor = try TestCertificateAuthority()  // same subject, another key
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers)
        let merchant = "merchant.com.example.\(purpose.rawValue)"
        let (key, csr) = try await store.create(merchantID: merchant, purpose: purpose, algorithm: purpose.defaultAlgorithm)
        for (certificate, message) in [
            (try impostor.issue(csrPEM: csr, merchantID: merchant, purpose: purpose), "does not chain to the test CA"),
            (
                try ca.issue(csrPEM: csr, merchantID: merchant, purpose: purpose, merchantIdentifierHash: .of("merchant.com.other")),
                "is not SHA-256 of \(merchant)"
            ),
            (
                try ca.issue(csrPEM: csr, merchantID: merchant, purpose: purpose, merchantIdentifierHash: .absent),
                "has no merchant identifier hash"
            ),
        ] {
            await expectUntrusted(message) { _ = try await store.importCertificate(MerchantCertificate(bytes: certificate)) }
            let unchanged = try await store.key(key.id.hex)
            #expect(unchanged.state == .pending && unchanged.certificate == nil)
        }
        let good = try ca.issue(csrPEM: csr, merchantID: merchant, purpose: purpose)
        #expect(try await store.importCertificate(MerchantCertificate(bytes: good)).outcome == .activated)
        await hsm.close()
    }

    /// Without configuration the test CA is not Apple: its Payment Processing certificates are
    /// refused naming WWDR CA - G2, its Merchant Identity certificates naming WWDR CA - G3 (no real
    /// identity certificate is public, so the identity path is tested with the test CA).
    @Test(arguments: [KeyPurpose.processing, .identity])
    func pinnedIssuersRefuseTheTestCA(purpose: KeyPurpose) async throws {
        let hsm = try await TestToken.make().open()
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm))
        let merchant = "merchant.com.example.pinned"
        let (key, csr) = try await store.create(merchantID: merchant, purpose: purpose, algorithm: purpose.defaultAlgorithm)
        let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchant, purpose: purpose)
        let expected =
            purpose == .processing
            ? "does not chain to Apple Worldwide Developer Relations CA - G2 under Apple Root CA - G3"
            : "does not chain to Apple Worldwide Developer Relations Certification Authority - G3 under Apple Root CA"
        await expectUntrusted(expected) { _ = try await store.importCertificate(MerchantCertificate(bytes: certificate)) }
        #expect(try await store.key(key.id.hex).state == .pending)
        await hsm.close()
    }

    /// `PAYWARDEN_CERTIFICATE_ISSUERS` reaches the CLI through the environment: an identity
    /// certificate from the test CA is refused without it and imported with it, with a warning.
    @Test func theSettingReplacesThePinnedIssuersForTheCLI() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make()
        let created = try env.paywarden(
            "keys", "create", "--merchant-id", "merchant.com.example.cli", "--purpose", "identity", "--csr-out", env.home + "/id.csr")
        #expect(created.status == 0, "\(created.stderr)")
        let csr = try String(contentsOfFile: env.home + "/id.csr", encoding: .utf8)
        let path = try env.write(try ca.issue(csrPEM: csr, merchantID: "merchant.com.example.cli", purpose: .identity), named: "id.cer")

        let refused = try env.paywarden("keys", "import-certificate", path)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("does not chain to Apple Worldwide Developer Relations Certification Authority - G3"))
        #expect(try env.listedKeys().map(\.state) == ["pending"])

        let issuers = try env.write(Array(ca.certificatePEM.utf8), named: "issuers.pem")
        let imported = try env.paywarden("keys", "import-certificate", path, environment: ["PAYWARDEN_CERTIFICATE_ISSUERS": issuers])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("warning: the certificate was checked against PAYWARDEN_CERTIFICATE_ISSUERS (\(issuers))"))
        #expect(try env.listedKeys().map(\.state) == ["active"])

        let unreadable = try env.paywarden("keys", "list", environment: ["PAYWARDEN_CERTIFICATE_ISSUERS": env.home + "/absent.pem"])
        #expect(unreadable.status == 3)
        #expect(unreadable.stderr.contains("PAYWARDEN_CERTIFICATE_ISSUERS: cannot read the certificate issuers file"))
    }

    func expectUntrusted(
        _ message: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        await expectError(.certificateUntrusted, message, sourceLocation: sourceLocation, body)
    }

    func expectError(
        _ code: CustodyError.Code, _ message: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("accepted; expected \(code.rawValue)", sourceLocation: sourceLocation)
        } catch let error as CustodyError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(message), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a CustodyError: \(error)", sourceLocation: sourceLocation)
        }
    }
}
