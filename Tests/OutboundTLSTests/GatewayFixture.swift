import Foundation
import KeyCustody
import Logging
import NIOSSL
import OutboundTLS
import PKCS11
import PaywardenTesting
import Testing

/// A SoftHSM token with a key store, a test "Apple WWDR" CA, and the stand-in gateway on
/// loopback requiring client certificates from that CA (or from `standInCA`).
struct GatewayFixture {
    static let merchantID = "merchant.com.example.gateway"

    let hsm: HSM
    let keys: MerchantKeyStore
    let ca: TestCertificateAuthority
    let standIn: AppleGatewayStandIn

    static func make(maximumTLSVersion: TLSVersion = .tlsv13, standInCA: TestCertificateAuthority? = nil) async throws -> GatewayFixture {
        let token = try await TestToken.make(labelPrefix: "gateway")
        let hsm = try await token.open()
        let ca = try TestCertificateAuthority()
        let standIn = try await AppleGatewayStandIn.start(clientCA: (standInCA ?? ca).certificate, maximumTLSVersion: maximumTLSVersion)
        return GatewayFixture(
            hsm: hsm, keys: MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers), ca: ca,
            standIn: standIn)
    }

    /// An identity key made in the HSM, its CSR signed by the CA, the certificate imported.
    @discardableResult
    func addIdentity(
        merchantID: String = merchantID, notBefore: Date = Date().addingTimeInterval(-3600), importCertificate: Bool = true
    ) async throws -> MerchantKey {
        let (key, csr) = try await keys.create(merchantID: merchantID, purpose: .identity, algorithm: .rsa)
        guard importCertificate else { return key }
        let der = try ca.issue(csrPEM: csr, merchantID: merchantID, purpose: .identity, notBefore: notBefore)
        return try await keys.importCertificate(try MerchantCertificate(bytes: der)).key
    }

    /// Apple's hosts plus the stand-in, whose server CA is trusted.
    func configuration() throws -> AppleGatewayConfiguration {
        let policy = try AppleGatewayHostPolicy(patterns: AppleGatewayHostPolicy.appleHosts + ["localhost:\(standIn.port)"])
        var configuration = try AppleGatewayConfiguration(baseURL: standIn.baseURL, hostPolicy: policy, extraTrustRoots: [standIn.serverCA])
        configuration.connectTimeout = .seconds(2)
        configuration.requestTimeout = .seconds(10)
        return configuration
    }

    /// Runs `body` with a client that is shut down however `body` ends.
    func withClient<T>(
        _ adjust: (inout AppleGatewayConfiguration) -> Void = { _ in }, _ body: (AppleGatewayClient) async throws -> T
    ) async throws -> T {
        var configuration = try configuration()
        adjust(&configuration)
        var logger = Logger(label: "paywarden.gateway.test")
        logger.logLevel = .critical
        let client = AppleGatewayClient(hsm: hsm, keys: keys, configuration: configuration, logger: logger)
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }
}

/// The gateway error `operation` throws, or nil when it throws none (another error is an issue).
func gatewayError(_ operation: () async throws -> Void) async -> AppleGatewayError? {
    do {
        try await operation()
        return nil
    } catch let error as AppleGatewayError {
        return error
    } catch {
        Issue.record("not an AppleGatewayError: \(error)")
        return nil
    }
}
