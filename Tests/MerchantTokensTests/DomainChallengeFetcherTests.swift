import Foundation
import MerchantTokens
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The web-merchant domain check reads a tenant-named domain's challenge file, so it goes only to
/// public addresses, over HTTPS with the domain's own certificate, and reads little.
@Suite(.serialized, .releasesTestResources)
struct DomainChallengeFetcherTests {
    static let nonPublic = [
        "127.0.0.1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "198.18.0.1", "192.0.2.7",
        "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
        "2002:a00:1::1", "2001:db8::1", "ff02::1",
    ]

    func failure(_ fetcher: DomainChallengeFetcher, _ domain: String) async -> String? {
        do {
            let lines = try await fetcher.servedChallenges(domain: domain)
            Issue.record("\(domain) was read: \(lines)")
            return nil
        } catch {
            return error.reason
        }
    }

    @Test(arguments: nonPublic)
    func noFetchGoesToANonPublicAddress(_ address: String) async {
        // A public address beside it does not help: every address of the name must be public.
        let fetcher = DomainChallengeFetcher(
            configuration: .init(port: 9, timeout: .seconds(2), resolve: { _ in ["93.184.215.14", address] }))
        let reason = await failure(fetcher, "shop.example.com")
        #expect(reason?.contains("not a public address") == true, "\(address): \(reason ?? "read")")
    }

    @Test func theSitesLinesAreReadOverHTTPSUnderTheDomainsOwnName() async throws {
        let site = try await MerchantSiteStandIn.start()
        site.serve(["paywarden-domain-challenge=one", "  paywarden-domain-challenge=two  ", ""], at: "shop.example.com")
        let fetcher = DomainChallengeFetcher(configuration: site.domainCheck)
        #expect(
            try await fetcher.servedChallenges(domain: "shop.example.com") == [
                "paywarden-domain-challenge=one", "paywarden-domain-challenge=two",
            ])
        #expect(site.askedHosts == ["shop.example.com"], "the request named the domain: \(site.askedHosts)")

        // A name the site's certificate does not cover, and a site whose CA is not trusted: nothing read.
        #expect(await failure(fetcher, "shop.example.test") != nil)
        var untrusting = site.domainCheck
        untrusting.extraTrustRoots = []
        #expect(await failure(DomainChallengeFetcher(configuration: untrusting), "shop.example.com") != nil)
        // No file, or one too large to be a challenge file.
        #expect(await failure(fetcher, "none.example.com")?.contains("answered 404") == true)
        site.serve([String(repeating: "x", count: DomainChallengeFetcher.maximumBytes + 1)], at: "large.example.com")
        #expect(await failure(fetcher, "large.example.com") != nil)
        // A name that does not resolve, and one whose name server does not answer in time.
        let nowhere = DomainChallengeFetcher(configuration: .init(resolve: { _ in [] }))
        #expect(await failure(nowhere, "shop.example.com")?.contains("no address") == true)
        let silent = DomainChallengeFetcher(
            configuration: .init(
                timeout: .milliseconds(200),
                resolve: { _ in
                    try await Task.sleep(for: .seconds(30))
                    return ["93.184.215.14"]
                }))
        let started = ContinuousClock.now
        #expect(await failure(silent, "shop.example.com")?.contains("could not be resolved within") == true)
        #expect(ContinuousClock.now - started < .seconds(10), "the look-up was waited for")
    }
}
