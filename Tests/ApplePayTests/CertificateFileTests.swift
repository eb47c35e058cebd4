import ApplePay
import Foundation
import PaywardenTesting
import Testing
import X509

/// Files that configuration names as trust roots or certificate issuers: PEM bundles (other
/// blocks skipped) or one DER certificate; anything else is refused, and each caller says which
/// setting was wrong.
@Suite struct CertificateFileTests {
    let directory = NSTemporaryDirectory() + "certificate-file-\(UUID().uuidString.prefix(8))/"

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func readsPEMBundlesAndDER() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try ApplePayTestPKI(name: "File", rsaLeaf: false)
        let bundle =
            pki.rootDER.pem("CERTIFICATE") + [UInt8](repeating: 1, count: 8).pem("EC PARAMETERS")
            + pki.intermediateDER.pem("CERTIFICATE")
        let fromPEM = try CertificateFile.read(try write(Array(bundle.utf8), "bundle.pem"))
        #expect(fromPEM == [pki.root, pki.intermediate])
        #expect(try CertificateFile.read(try write(pki.rootDER, "root.der")) == [pki.root])
    }

    @Test func refusesWhatIsNotACertificate() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try ApplePayTestPKI(name: "File", rsaLeaf: false)
        #expect(throws: CertificateFile.Failure.unreadable) { try CertificateFile.read(directory + "missing.pem") }
        let truncated = try write(Array(pki.rootDER.dropLast(5)), "truncated.der")
        #expect(throws: CertificateFile.Failure.notACertificate) { try CertificateFile.read(truncated) }
        let broken = try write(Array("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".utf8), "broken.pem")
        #expect(throws: CertificateFile.Failure.notACertificate) { try CertificateFile.read(broken) }

        // Each caller names its setting.
        #expect(throws: PaymentTokenError.self) { try TrustAnchors.load(paths: [truncated]) }
        do {
            _ = try TrustAnchors.load(paths: [truncated])
        } catch {
            #expect(error.message.contains("trust root \(truncated) is not a PEM or DER certificate"))
        }
    }
}
