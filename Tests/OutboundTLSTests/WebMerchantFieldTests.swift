import Foundation
import OutboundTLS
import Testing

/// The Web Merchant Registration API's limits and encodings, checked without a socket: Apple's
/// character set and lengths, domain syntax, the path encoding, and Apple's `encryptTo` hash.
struct WebMerchantFieldTests {
    /// Apple's own example: `encryptTo` "platformintegrator.com.example" comes back as this hash.
    @Test func encryptToIsApplesUppercaseSHA256ComparedCaseInsensitively() {
        let apple = "DE1EB292B6781EFF977E45ECB42B047BE83DA586C537B4841E29A59065BC122B"
        #expect(MerchantDetails.encryptToHash("platformintegrator.com.example") == apple)
        for text in [apple, apple.lowercased()] {
            let details = MerchantDetails(
                partnerInternalMerchantIdentifier: nil, partnerMerchantName: nil, domainNames: nil, encryptTo: text,
                partnerMerchantValidationURI: nil)
            #expect(details.encryptToMatches("platformintegrator.com.example") == true)
            #expect(details.encryptToMatches("merchant.com.example") == false)
        }
        let silent = MerchantDetails(
            partnerInternalMerchantIdentifier: nil, partnerMerchantName: nil, domainNames: nil, encryptTo: nil,
            partnerMerchantValidationURI: nil)
        #expect(silent.encryptToMatches("platformintegrator.com.example") == nil, "unknown, not a mismatch")
    }

    @Test func identifiersAreAppleCharacterSetAndLength() {
        for good in ["ABC-123456", "abc", "a~-_+&@$!|,.;z", String(repeating: "x", count: 1024)] {
            #expect(WebMerchantField.isPartnerIdentifier(good), "\(good.prefix(20))")
        }
        for bad in ["ab", String(repeating: "x", count: 1025), "has space", "a#b", "a/b", "a%b", "é-accent", "a?b", ""] {
            #expect(!WebMerchantField.isPartnerIdentifier(bad), "\(bad.prefix(20))")
        }
    }

    @Test func thePathSegmentPercentEncodesEveryReservedCharacter() {
        #expect(WebMerchantField.pathSegment("a|b&c$d;e+f") == "a%7Cb%26c%24d%3Be%2Bf")
        #expect(WebMerchantField.pathSegment("A-1_2.3~x") == "A-1_2.3~x")
        #expect(WebMerchantField.pathSegment("@!,") == "%40%21%2C")
    }

    @Test func domainsAreFullyQualifiedLowercaseNames() {
        for good in ["shop.example.com", "a.b", "xn--bcher-kva.example", "sub-1.example.co.uk"] {
            #expect(WebMerchantField.isDomainName(good), "\(good)")
        }
        for bad in [
            "localhost", "Shop.example.com", "*.example.com", "https://example.com", "example.com/", "example.com:443", "10.0.0.1",
            "-a.example.com", "example..com", "example.com.", "",
        ] {
            #expect(!WebMerchantField.isDomainName(bad), "\(bad)")
        }
    }

    @Test func requestsRefuseWhatAppleWouldBeforeAnythingIsSent() throws {
        let good = try RegisterMerchantRequest(
            partnerInternalMerchantIdentifier: "ABC-123456", partnerMerchantName: "Example Merchant",
            domainNames: ["subdomain-1.example.com", "subdomain-2.example.com"], encryptTo: "platformintegrator.com.example",
            merchantURL: "https://example.com")
        #expect(good.domainNames.count == 2)
        func refused(_ make: () throws -> Void) -> Bool {
            do {
                try make()
                return false
            } catch {
                return (error as? AppleGatewayError)?.code == .invalidRequest
            }
        }
        let hundred = (1...100).map { "d\($0).example.com" }
        let hundredDomains = refused {
            _ = try RegisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", partnerMerchantName: "x", domainNames: hundred, encryptTo: "e", merchantURL: nil
            )
        }
        #expect(hundredDomains)
        let duplicateDomain = refused {
            _ = try RegisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", partnerMerchantName: "x", domainNames: ["a.example.com", "a.example.com"],
                encryptTo: "e", merchantURL: nil)
        }
        #expect(duplicateDomain)
        let longName = refused {
            _ = try RegisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", partnerMerchantName: String(repeating: "n", count: 1025),
                domainNames: ["a.example.com"], encryptTo: "e", merchantURL: nil)
        }
        #expect(longName)
        let notHTTPS = refused {
            _ = try RegisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", partnerMerchantName: "x", domainNames: ["a.example.com"], encryptTo: "e",
                merchantURL: "javascript:alert(1)")
        }
        #expect(notHTTPS)
        let emptyReason = refused {
            _ = try UnregisterMerchantRequest(partnerInternalMerchantIdentifier: "ABC-1", domainNames: ["a.example.com"], reason: "")
        }
        #expect(emptyReason)
        let longReason = refused {
            _ = try UnregisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", domainNames: ["a.example.com"], reason: String(repeating: "r", count: 1025))
        }
        #expect(longReason)
        let goodUnregister = refused {
            _ = try UnregisterMerchantRequest(
                partnerInternalMerchantIdentifier: "ABC-1", domainNames: ["a.example.com"], reason: "merchant has closed their account")
        }
        #expect(!goodUnregister)
    }
}
