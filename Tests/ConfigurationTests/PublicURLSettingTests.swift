import Foundation
import PaywardenConfiguration
import PaywardenTestTraits
import Testing

/// `PAYWARDEN_PUBLIC_URL` (`public_url`): where devices fetch usage-information packages. https,
/// or http only to a loopback host; anything else keeps Paywarden from starting.
@Suite(.serialized, .releasesTestResources)
struct PublicURLSettingTests {
    @Test func unsetTurnsUsageInformationOff() async throws {
        #expect(try await PaywardenSettings.load(environment: [:]).merchantTokens.publicURL == nil)
    }

    @Test(arguments: ["https://pay.example.com", "https://pay.example.com:8443/apple", "http://127.0.0.1:8080", "http://localhost:9"])
    func httpsOrLoopbackHTTPIsAccepted(url: String) async throws {
        #expect(try await PaywardenSettings.load(environment: ["PAYWARDEN_PUBLIC_URL": url]).merchantTokens.publicURL == url)
    }

    @Test(arguments: [
        "http://pay.example.com", "ftp://pay.example.com", "https://user:pw@pay.example.com", "https://pay.example.com/?a=1",
        "https://pay.example.com/", "pay.example.com",
    ])
    func anythingElseIsRefused(url: String) async throws {
        await #expect(throws: ConfigurationError.self) {
            _ = try await PaywardenSettings.load(environment: ["PAYWARDEN_PUBLIC_URL": url])
        }
    }
}
