import Foundation
import KeyCustody
import NIOSSL
import OutboundTLS
import PKCS11
import PaywardenConfiguration
import PaywardenServices

extension RelayService {
    /// Checks every upstream client key that is named by HSM key id, and gives its upstream client
    /// the HSM-backed key. Run before the API listens, once the database (which holds the keys'
    /// certificates) is prepared. Anything that would present the wrong identity, or none, stops
    /// the start with the setting to fix: a key that is not in the HSM, not an upstream key, or
    /// retired; no certificate for it; a certificate whose public key is another key's.
    public func prepareClientKeys() async throws(ServerStartError) {
        let clients = [cnp, mercuryPay, radial].compactMap { $0 }.filter { $0.configuration.clientKeyInHSM != nil }
        guard !clients.isEmpty else { return }
        let all: [MerchantKey]
        do throws(CustodyError) {
            all = try await keys.list()
        } catch {
            throw ServerStartError("the upstream client keys cannot be read from the HSM and the database: \(error.message)")
        }
        for client in clients {
            guard let keyID = client.configuration.clientKeyInHSM else { continue }
            let settings = RelayConfiguration.clientSettings(client.configuration.format)
            let key = try Self.upstreamKey(keyID, in: all, setting: settings.key.environmentName)
            let chain = try Self.chain(for: key, configured: client.configuration.clientCertificateChain, settings: settings)
            client.useHSMKey(HSMTLSSigningKey(hsm: hsm, keyID: key.id, logger: logger), chain: chain)
            logger.info(
                "processor upstream client key is in the HSM",
                metadata: ["format": "\(client.configuration.format.rawValue)", "key-id": "\(key.id)"])
        }
    }

    /// The key `keyID` names, if it is an upstream key that is not retired.
    private static func upstreamKey(_ keyID: KeyIdentifier, in all: [MerchantKey], setting: String) throws(ServerStartError)
        -> MerchantKey
    {
        guard let key = all.first(where: { $0.id == keyID }) else {
            throw ServerStartError(
                "\(setting) names key \(keyID), which is not a Paywarden key in the HSM: create one with `paywarden keys create "
                    + "--purpose upstream`, and give its whole id as `paywarden keys list` prints it")
        }
        guard key.purpose == .upstream else {
            throw ServerStartError(
                "\(setting) names key \(keyID), a \(key.purpose.rawValue) key: an upstream's client key is one made for it "
                    + "(`paywarden keys create --purpose upstream`), so an Apple Pay key never authenticates to a processor")
        }
        guard key.state != .retired else {
            throw ServerStartError("\(setting) names key \(keyID), which is retired: name the upstream key that replaced it")
        }
        return key
    }

    /// The configured chain, or the certificate imported for the key; either way its leaf must
    /// hold the key's public key, or every handshake would fail (or present someone else's name).
    private static func chain(
        for key: MerchantKey, configured: [NIOSSLCertificate], settings: (certificate: Setting, key: Setting)
    ) throws(ServerStartError) -> [NIOSSLCertificate] {
        var chain = configured
        let source = chain.isEmpty ? "the certificate imported for key \(key.id)" : settings.certificate.environmentName
        if chain.isEmpty, let stored = key.certificate {
            do {
                chain = [try NIOSSLCertificate(bytes: stored.der, format: .der)]
            } catch {
                throw ServerStartError("\(source) cannot be used for TLS (\(error)); import the processor's certificate again")
            }
        }
        guard let leaf = chain.first else {
            throw ServerStartError(
                "\(settings.key.environmentName) names key \(key.id), which has no certificate: import the processor's with `paywarden "
                    + "keys import-certificate`, or set \(settings.certificate.environmentName)")
        }
        let leafKey: [UInt8]
        let hsmKey: [UInt8]
        do {
            leafKey = try leaf.extractPublicKey().toSPKIBytes()
            hsmKey = try key.key.publicKey.subjectPublicKeyInfo()
        } catch {
            throw ServerStartError("\(source) or key \(key.id) has an unreadable public key: \(error)")
        }
        guard leafKey == hsmKey else {
            throw ServerStartError(
                "\(source) is not the certificate of key \(key.id) (\(settings.key.environmentName)): its public key is another key's; "
                    + "give the certificate the processor issued for this key's CSR")
        }
        return chain
    }
}
