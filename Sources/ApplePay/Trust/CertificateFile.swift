import Foundation
import SwiftASN1
import X509

/// The certificates in a file that configuration names (trust roots, certificate issuers): PEM
/// with one or more CERTIFICATE blocks, or one DER certificate. Callers word the error for their
/// setting.
public enum CertificateFile {
    public enum Failure: Error, Sendable {
        case unreadable
        case notACertificate
    }

    public static func read(_ path: String) throws(Failure) -> [Certificate] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable }
        do {
            guard let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") else {
                return [try Certificate(derEncoded: Array(data))]
            }
            return try PEMDocument.parseMultiple(pemString: text).filter { $0.discriminator == "CERTIFICATE" }.map {
                try Certificate(derEncoded: $0.derBytes)
            }
        } catch {
            throw .notACertificate
        }
    }
}
