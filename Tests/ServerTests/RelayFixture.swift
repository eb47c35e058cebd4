import Foundation
import KeyCustody
import NIOSSL
import PKCS11
import PaywardenServer
import PaywardenTesting
import ProcessorRelays
import Synchronization
import Testing
import X509

/// A test server whose relay goes to a stand-in upstream (HTTP, or HTTPS under the stand-in's own
/// CA), for the relay tests of every format.
struct RelayFixture: Sendable {
    let server: TestServer
    let upstream: ProcessorUpstreamStandIn
    /// The two keys of ``ClientCertificate/changingOver(newFirst:downAtStart:)``.
    var changeover: Changeover?

    /// Two upstream keys in the HSM, each with the certificate the upstream's CA issued for it.
    struct Changeover: Sendable {
        let old: KeyIdentifier
        let new: KeyIdentifier
        let oldCertificate: [UInt8]
        let newCertificate: [UInt8]
    }

    static let timeout = Duration.seconds(2)

    /// An upstream that requires a client certificate, and whether Paywarden is given one.
    enum ClientCertificate: Equatable {
        /// A PEM key and certificate from the upstream's CA.
        case presented
        case withheld
        /// A key in the HSM (purpose upstream) with the certificate the upstream's CA issued for
        /// its CSR, imported with it; the settings name the key by id.
        case inHSM
        /// The same, but the certificate comes from a CA the upstream does not trust.
        case inHSMFromAnotherCA
        /// Two keys in the HSM, both certified by the upstream's CA, which at first trusts only the
        /// old one's certificate (``RelayFixture/changeover``); the settings name the new key first
        /// when `newFirst`, and the upstream is asked every 200 ms while the less preferred is presented.
        /// `downAtStart`: the old key is recorded as in use and the upstream is down when the server
        /// starts (``ProcessorUpstreamStandIn/restart()`` brings it back).
        case changingOver(newFirst: Bool, downAtStart: Bool = false)
    }

    /// Runs `body` against a server whose relay `configure` sets up, given the stand-in's base
    /// configuration (URL, trust roots, a 2 s timeout); `prepare` makes keys as an admin would
    /// before the start. Afterwards, whatever the test sent, the
    /// upstream must have seen no registration ID, no encrypted token and no missing card data.
    static func with(
        tls: Bool = false, clientCertificate: ClientCertificate? = nil,
        configure: @escaping @Sendable (UpstreamConfiguration) -> RelayConfiguration,
        adjust: @escaping @Sendable (inout ServerConfiguration) throws -> Void = { _ in },
        prepare: @escaping @Sendable (MerchantKeyStore) async throws -> Void = { _ in }, _ body: (RelayFixture) async throws -> Void
    ) async throws {
        let upstream = try await ProcessorUpstreamStandIn.start(
            tls: tls || clientCertificate != nil, requireClientCertificate: clientCertificate != nil)
        let directory = NSTemporaryDirectory() + "paywarden-relay-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        let caPath = tls || clientCertificate != nil ? try upstream.writeServerCA(to: directory) : nil
        let identity = clientCertificate == .presented ? try upstream.writeClientIdentity(to: directory) : nil
        let hsmKeyIssuer: ProcessorUpstreamStandIn? =
            switch clientCertificate {
            case .inHSM?, .changingOver?: upstream
            case .inHSMFromAnotherCA?: try await ProcessorUpstreamStandIn.start(tls: true)
            default: nil
            }
        let changeover = Mutex<Changeover?>(nil)
        do {
            try await withServer { configuration in
                var base = UpstreamConfiguration(format: .cnpAPI, baseURL: upstream.baseURL, timeout: timeout)
                if let caPath { base.extraTrustRoots = try NIOSSLCertificate.fromPEMFile(caPath) }
                if let identity {
                    base.clientCertificateChain = try NIOSSLCertificate.fromPEMFile(identity.certificate)
                    base.clientKey = try NIOSSLPrivateKey(file: identity.key, format: .pem)
                }
                configuration.relay = configure(base)
                // The default audit log is under the shared home: each relay server keeps its own.
                configuration.auditLogPath = directory + "/audit/audit.jsonl"
                try adjust(&configuration)
            } configuringWithKeys: { store in
                try await prepare(store)
                guard let hsmKeyIssuer else { return { _ in } }
                if case .changingOver(let newFirst, let downAtStart)? = clientCertificate {
                    let keys = try await changingOver(in: store, certifiedBy: upstream)
                    changeover.withLock { $0 = keys }
                    if downAtStart {
                        try await store.recordUpstreamKeyInUse(keys.old, upstream: "cnpapi")
                        try await upstream.stop()
                    }
                    let order = newFirst ? [keys.new, keys.old] : [keys.old, keys.new]
                    return { configuration in
                        configuration.relay.cnp?.clientKeysInHSM = order
                        configuration.relay.cnp?.clientKeyCheckInterval = .milliseconds(200)
                    }
                }
                let keyID = try await upstreamKey(in: store, certifiedBy: hsmKeyIssuer)
                return { configuration in
                    configuration.relay.cnp?.clientKeysInHSM = [keyID]
                    configuration.relay.mercuryPay?.clientKeysInHSM = [keyID]
                    configuration.relay.radial?.clientKeysInHSM = [keyID]
                }
            } _: { server in
                try await body(RelayFixture(server: server, upstream: upstream, changeover: changeover.withLock { $0 }))
                for received in upstream.received { #expect(received.problems.isEmpty, "\(received.problems)") }
                for received in upstream.receivedMercuryPay { #expect(received.problems.isEmpty, "\(received.problems)") }
                for received in upstream.receivedRadial { #expect(received.problems.isEmpty, "\(received.problems)") }
            }
        } catch {
            if let hsmKeyIssuer, hsmKeyIssuer !== upstream { try? await hsmKeyIssuer.stop() }
            try? await upstream.stop()
            throw error
        }
        if let hsmKeyIssuer, hsmKeyIssuer !== upstream { try await hsmKeyIssuer.stop() }
        try await upstream.stop()
    }

    /// The upstream saw the certificate its CA issued for the HSM key's CSR (``ClientCertificate/inHSM``):
    /// an RSA key (the PEM identity of other tests is P-256), for the relay's subject; and the start
    /// said where the key is.
    func expectTheHSMKeysCertificateWasPresented(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let presented = try #require(upstream.clientCertificates.last, sourceLocation: sourceLocation)
        let certificate = try Certificate(derEncoded: presented)
        let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
        let spki = try NIOSSLCertificate(bytes: presented, format: .der).extractPublicKey().toSPKIBytes()
        #expect(spki.indices.contains { Array(spki[$0...].prefix(rsaEncryption.count)) == rsaEncryption }, sourceLocation: sourceLocation)
        #expect("\(certificate.subject)".contains("Paywarden relay"), sourceLocation: sourceLocation)
        #expect(server.logs.text.contains("processor upstream client key is in the HSM"), sourceLocation: sourceLocation)
        #expect(!server.logs.text.contains("TLS client key is a PEM file"), sourceLocation: sourceLocation)
    }

    /// Two upstream keys certified by `issuer`, which from now on trusts only the old one's certificate.
    static func changingOver(in store: MerchantKeyStore, certifiedBy issuer: ProcessorUpstreamStandIn) async throws -> Changeover {
        let old = try await upstreamKey(in: store, certifiedBy: issuer)
        let new = try await upstreamKey(in: store, certifiedBy: issuer)
        let keys = try await store.list()
        let certificate = { (id: KeyIdentifier) in try #require(keys.first { $0.id == id }?.certificate?.der) }
        let changeover = Changeover(old: old, new: new, oldCertificate: try certificate(old), newCertificate: try certificate(new))
        issuer.trustOnlyClientCertificates([changeover.oldCertificate])
        return changeover
    }

    /// What an admin does for an upstream that requires mutual TLS: `keys create --purpose
    /// upstream`, the processor (`issuer`) certifies the CSR, `keys import-certificate`.
    static func upstreamKey(in store: MerchantKeyStore, certifiedBy issuer: ProcessorUpstreamStandIn) async throws -> KeyIdentifier {
        let (key, csr) = try await store.create(merchantID: "relay.upstream", purpose: .upstream, algorithm: .rsa)
        let certificate = try MerchantCertificate(bytes: try issuer.issueClientCertificate(csrPEM: csr))
        let (active, outcome) = try await store.importCertificate(certificate)
        #expect(outcome == .activated && active.state == .active && active.purpose == .upstream)
        return key.id
    }
}

extension TestServer {
    /// Registers a forged 3-D Secure token for `pan` through eProtect on the example paypage and
    /// returns the registration ID.
    func registerThroughEProtect(pan: String, cryptogram: String) async throws -> String {
        try await registerThroughEProtect(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: cryptogram))
    }

    /// Registers a forged token of `payload` (a DPAN's or an MPAN's) through eProtect on the
    /// example paypage and returns the registration ID.
    func registerThroughEProtect(payload: [UInt8]) async throws -> String {
        let form = try EProtectForms.form(token: try ecToken(payload: payload), paypageID: TestServer.examplePaypage)
        let registered = try await send(
            .POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
        return try #require(
            (try JSONSerialization.jsonObject(with: Data(registered.body)) as? [String: Any])?["paypageRegistrationId"] as? String,
            "\(registered.status) \(registered.text)")
    }
}

extension TestServer {
    /// The example organisation's high-value token for `payload`, issued by redeeming a fresh
    /// registration (nothing relayed), with the kind the vault recorded (`dpan` or `mpan`).
    func highValueToken(payload: [UInt8]) async throws -> (token: String, kind: String) {
        let id = try await registerThroughEProtect(payload: payload)
        let redeemed = try await send(.POST, "/v1/registrations/\(id)/redeem", apiKey: .some(vaultKey))
        let object = try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any]
        let issued = try #require(object?["highValueToken"] as? [String: Any], "\(redeemed.status) \(redeemed.text)")
        return (try #require(issued["token"] as? String), try #require(issued["kind"] as? String))
    }

    /// The audit log's lines so far (a relay fixture's server has an audit log of its own).
    func auditLines() throws -> [Substring] {
        let text = (try? String(contentsOfFile: try #require(server.configuration.auditLogPath), encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }
}

extension RelayFixture {
    /// What of the card data a client's reply gives back, in a form a reader would still
    /// recognise: the account number in any run of digits (whatever separates them, Unicode digits
    /// read as ASCII), the cryptogram with whitespace removed. Empty when neither is there.
    static func cardDataIn(_ reply: String, accountNumber: String, cryptogram: String) -> [String] {
        var digits = ""
        for scalar in reply.unicodeScalars where scalar.properties.numericType == .decimal {
            if let value = scalar.properties.numericValue { digits += String(Int(value)) }
        }
        let compact = String(String.UnicodeScalarView(reply.unicodeScalars.filter { !$0.properties.isWhitespace }))
        var found: [String] = []
        if digits.contains(accountNumber) { found.append("the account number") }
        if compact.contains(cryptogram) { found.append("the cryptogram") }
        return found
    }
}
