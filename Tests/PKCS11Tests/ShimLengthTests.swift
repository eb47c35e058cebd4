import Crypto
import Foundation
import PaywardenHSMTesting
import Testing

@testable import PKCS11

/// The OpenSSL shim takes `size_t` lengths and OpenSSL takes `int`: a length over INT_MAX is
/// refused before anything is read. Each buffer here holds a valid key but claims 2^32 more bytes
/// than it has, so a truncating cast would see exactly the valid key and accept it; the refusal
/// proves the check ran first (and nothing past the buffer was read).
@Suite struct ShimLengthTests {
    static let overInt32 = 1 << 32

    @Test func aKeyFileLengthOverIntMaxIsRefusedBeforeReading() throws {
        let pem = Array(P256.Signing.PrivateKey().pemRepresentation.utf8)
        #expect(throws: Never.self) { try SoftwarePrivateKey(pemOrDER: pem) }
        let error = pem.withUnsafeBufferPointer { buffer in
            let claimed = UnsafeBufferPointer(start: buffer.baseAddress, count: Self.overInt32 + buffer.count)
            return #expect(throws: PKCS11Error.self) { try SoftwarePrivateKey(pemOrDERBytes: claimed) }
        }
        #expect(error?.code == .invalidInput)
        #expect(error?.category == .badInput)
    }

    @Test func aPKCS12LengthOverIntMaxIsRefusedBeforeReading() throws {
        let work = NSTemporaryDirectory() + "paywarden-shim-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: work + "/key.pem", atomically: true, encoding: .utf8)
        try "shim-pass".write(toFile: work + "/pass", atomically: true, encoding: .utf8)
        for arguments in [
            ["req", "-new", "-x509", "-key", "key.pem", "-subj", "/CN=shim", "-days", "1", "-out", "cert.pem"],
            ["pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-passout", "file:pass", "-out", "key.p12"],
        ] {
            #expect(try ChildProcess.run("/usr/bin/openssl", arguments, directory: URL(fileURLWithPath: work)).status == 0)
        }
        let p12 = Array(try Data(contentsOf: URL(fileURLWithPath: work + "/key.p12")))
        #expect(try SoftwarePrivateKey(pkcs12: p12, password: "shim-pass").certificate != nil)
        let error = p12.withUnsafeBufferPointer { buffer in
            let claimed = UnsafeBufferPointer(start: buffer.baseAddress, count: Self.overInt32 + buffer.count)
            return #expect(throws: PKCS11Error.self) { try SoftwarePrivateKey(pkcs12Bytes: claimed, password: "shim-pass") }
        }
        #expect(error?.code == .invalidInput)
    }
}
