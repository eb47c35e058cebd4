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

    /// Why files named together gave no certificate: the file at fault, or none holds one.
    public enum ListFailure: Error, Sendable {
        case unreadable(path: String)
        case notACertificate(path: String)
        case noCertificate

        /// The failure in a setting's words: `file` names one of its files (`trust root`), `files`
        /// all of them (`the trust-root files`).
        public func message(file: String, files: String) -> String {
            switch self {
            case .unreadable(let path): "cannot read \(file) \(path)"
            case .notACertificate(let path): "\(file) \(path) is not a PEM or DER certificate"
            case .noCertificate: "\(files) hold no certificate"
            }
        }
    }

    /// Every certificate of every file in `paths`, in order: at least one.
    public static func read(paths: [String]) throws(ListFailure) -> [Certificate] {
        var certificates: [Certificate] = []
        for path in paths {
            do throws(Failure) {
                certificates += try read(path)
            } catch .unreadable {
                throw .unreadable(path: path)
            } catch {
                throw .notACertificate(path: path)
            }
        }
        guard !certificates.isEmpty else { throw .noCertificate }
        return certificates
    }
}
