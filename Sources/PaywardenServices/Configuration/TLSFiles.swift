import Foundation
import NIOSSL
import PaywardenConfiguration
import PaywardenPrimitives

/// The PEM files a TLS setting names, read and checked when the configuration is loaded: each
/// must be readable and hold what its setting says, a key must belong to its certificate, and a
/// key file must be its owner's alone (``SecretFileRule``; certificates are public).
/// Otherwise the start is refused with a message naming the setting, instead of the listener (or
/// the first relay call) failing later.
public enum TLSFiles {
    /// A certificate and its private key, as a listener or a client presents them.
    public struct Identity: Sendable {
        /// Leaf first, then the chain as the file lists it.
        public let chain: [NIOSSLCertificate]
        package let key: NIOSSLPrivateKey
    }

    /// The certificate chain in `certificate` and the unencrypted private key in `key`, checked
    /// to belong together.
    public static func identity(certificate: (path: String, setting: Setting), key: (path: String, setting: Setting))
        throws(ConfigurationError)
        -> Identity
    {
        let chain = try certificates(certificate.path, certificate.setting, holding: "a PEM certificate chain, leaf first")
        let bytes = try read(key.path, key.setting)
        guard (try? NIOSSLPrivateKey(bytes: bytes, format: .pem)) != nil else {
            throw ConfigurationError(key.setting, value: key.path, expected: "an unencrypted PEM private key")
        }
        // Once it is known to be a key (a certificate named by mistake is refused as not a key),
        // the key used is the one read through the secret-file rule's own check.
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(bytes: try SecretFileRule.read(key.path), format: .pem)
        } catch let refusal as SecretFileRule.Refusal {
            throw ConfigurationError("\(key.setting.environmentName): \(refusal.message)")
        } catch {
            throw ConfigurationError(key.setting, value: key.path, expected: "an unencrypted PEM private key")
        }
        // BoringSSL compares the key with the leaf's public key when both go into one context.
        var check = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(chain[0])], privateKey: .privateKey(privateKey))
        check.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: check)
        } catch {
            throw ConfigurationError(
                "\(key.setting.environmentName) (\(key.path)) is not the private key of the certificate in "
                    + "\(certificate.setting.environmentName) (\(certificate.path)): give the key the certificate was issued for")
        }
        return Identity(chain: chain, key: privateKey)
    }

    /// The PEM certificates in `path`: at least one, every block readable.
    public static func certificates(_ path: String, _ setting: Setting, holding what: String) throws(ConfigurationError)
        -> [NIOSSLCertificate]
    {
        let bytes = try read(path, setting)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw ConfigurationError(setting, value: path, expected: what)
        }
        guard !certificates.isEmpty else { throw ConfigurationError(setting, value: path, expected: what) }
        return certificates
    }

    /// The file's bytes; a path that cannot be read (missing, a directory, no permission) is refused.
    private static func read(_ path: String, _ setting: Setting) throws(ConfigurationError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let data = FileManager.default.contents(atPath: path)
        else { throw ConfigurationError(setting, value: path, expected: "a readable file") }
        return Array(data)
    }
}
