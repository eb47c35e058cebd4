import Foundation
import KeyCustody
import NIOSSL
import OutboundTLS
import PKCS11
import PaywardenConfiguration
import PaywardenServices

extension RelayService {
    /// Checks every upstream client key that is named by HSM key id, and gives its upstream client
    /// the HSM-backed keys (of two, it presents the first the upstream accepts). Run before the API
    /// listens, once the database (which holds the keys' certificates) is prepared. Anything that
    /// would present the wrong identity, or none, stops the start with the setting to fix: a key
    /// that is not in the HSM, not an upstream key, or retired; no certificate for it; a
    /// certificate whose public key is another key's.
    public func prepareClientKeys() async throws(ServerStartError) {
        let clients = [cnp, mercuryPay, radial].compactMap { $0 }.filter { !$0.configuration.clientKeysInHSM.isEmpty }
        guard !clients.isEmpty else { return }
        let all: [MerchantKey]
        do throws(CustodyError) {
            all = try await keys.list()
        } catch {
            throw ServerStartError("the upstream client keys cannot be read from the HSM and the database: \(error.message)")
        }
        // What an instance last chose, presented until the upstream says (it may be unreachable now);
        // only a changeover between two keys has a choice to remember.
        let changingOver = clients.contains { $0.configuration.clientKeysInHSM.count > 1 }
        let recorded = changingOver ? (try? await keys.upstreamKeysInUse()) ?? [] : []
        for client in clients {
            let configuration = client.configuration
            let settings = RelayConfiguration.clientSettings(configuration.format)
            var keys: [MerchantKey] = []
            for keyID in configuration.clientKeysInHSM {
                keys.append(try Self.upstreamKey(keyID, in: all, setting: settings.key.environmentName))
            }
            let configured = try Self.configuredChain(configuration.clientCertificateChain, for: keys, settings: settings)
            var identities: [ClientIdentity] = []
            for key in keys {
                let chain = try Self.chain(for: key, configured: configured[key.id] ?? [], settings: settings)
                identities.append(ClientIdentity(signingKey: HSMTLSSigningKey(hsm: hsm, keyID: key.id, logger: logger), chain: chain))
            }
            let format = configuration.format.rawValue
            let last = recorded.first { $0.upstream == format }?.keyID
            await client.useHSMKeys(identities, recorded: last) { [keys = self.keys, logger] keyID in
                do throws(CustodyError) {
                    try await keys.recordUpstreamKeyInUse(keyID, upstream: format)
                } catch {
                    logger.warning(
                        "could not record which client key the upstream is presented (keys list shows the last recorded)",
                        metadata: ["format": "\(format)", "error": "\(error.message)"])
                }
            }
            logger.info(
                "processor upstream client key is in the HSM",
                metadata: [
                    "format": "\(format)", "key-id": "\(client.clientKeyInUse.map(\.hex) ?? "")",
                    "keys": "\(keys.map(\.id.hex).joined(separator: ","))",
                ])
        }
    }

    /// The key the configured chain belongs to: the only key, or, of several, the one whose public
    /// key its leaf holds (the others present the certificates imported for them).
    private static func configuredChain(
        _ configured: [NIOSSLCertificate], for keys: [MerchantKey], settings: (certificate: Setting, key: Setting)
    ) throws(ServerStartError) -> [KeyIdentifier: [NIOSSLCertificate]] {
        guard let leaf = configured.first, let first = keys.first else { return [:] }
        guard keys.count > 1 else { return [first.id: configured] }
        let leafKey = try? leaf.extractPublicKey().toSPKIBytes()
        guard let owner = keys.first(where: { (try? $0.key.publicKey.subjectPublicKeyInfo()) == leafKey }) else {
            throw ServerStartError(
                "\(settings.certificate.environmentName) holds the certificate of none of the keys \(settings.key.environmentName) names: "
                    + "unset it (each key presents the certificate imported for it) or give the certificate of one of them")
        }
        return [owner.id: configured]
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
