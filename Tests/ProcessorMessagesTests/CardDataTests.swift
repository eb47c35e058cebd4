import Foundation
import Testing

@testable import ProcessorMessages

@Suite("Card data never leaks")
struct CardDataTests {
    @Test func descriptionDebugDescriptionAndMirrorAreMasked() throws {
        let card = try TestCards.applePay()
        var dumped = ""
        dump(card, to: &dumped)
        let renderings = [
            card.description, card.debugDescription, String(describing: card), String(reflecting: card), "\(card)", dumped,
            String(describing: Mirror(reflecting: card).children.map(\.value)),
        ]
        for text in renderings {
            #expect(!text.contains(TestCards.pan), "\(text)")
            #expect(!text.contains(TestCards.cryptogram), "\(text)")
            #expect(!text.contains("301231"), "\(text)")
        }
        #expect(card.description.contains("476173******0010"))
        #expect(card.maskedAccountNumber == "476173******0010")
        #expect(card.bin == "476173" && card.lastFour == "0010")
        #expect(card.expirationMMYY == "1230" && card.expirationYearMonth == "2030-12")
        #expect(card.resolvedNetwork == .visa)
    }

    @Test func refusesUnusableCardDataWithoutEchoingIt() {
        let cases: [(String, String, String?, String?, String)] = [
            ("4761-7390-0101-0010", "301231", nil, nil, "accountNumber"),
            ("47617390", "301231", nil, nil, "accountNumber"),
            // The vault's rule, 13 to 19 digits: nothing shorter is ever issued or forwarded.
            ("476173900101", "301231", nil, nil, "accountNumber"),
            ("47617390010100100000", "301231", nil, nil, "accountNumber"),
            (TestCards.pan, "3012", nil, nil, "expirationYYMMDD"),
            (TestCards.pan, "301331", nil, nil, "expirationYYMMDD"),
            (TestCards.pan, "301231", "not base64!", nil, "cryptogram"),
            (TestCards.pan, "301231", TestCards.cryptogram, "7x", "eci"),
        ]
        for (pan, expiry, cryptogram, eci, field) in cases {
            let error = messageError {
                _ = try ForwardedCardData(accountNumber: pan, expirationYYMMDD: expiry, cryptogram: cryptogram, eci: eci)
            }
            #expect(error?.field == field)
            #expect(error?.format == .cardData)
            #expect(
                !(error?.description.contains(pan) ?? true) || pan == TestCards.pan && !(error?.description.contains(TestCards.pan) ?? true)
            )
            if let cryptogram { #expect(!(error?.description.contains(cryptogram) ?? true)) }
        }
    }

    @Test func masksFirstSixLastFourAtMost() {
        #expect(CardNumberMasking.firstSixLastFour("4761739001010010") == "476173******0010")
        #expect(CardNumberMasking.firstSixLastFour("371449635398431") == "371449*****8431")
        #expect(CardNumberMasking.firstSixLastFour("123456789012") == "********9012")
        #expect(CardNumberMasking.lastFour("4761739001010010") == "XXXXXXXXXXXX0010")
        #expect(CardNumberMasking.lastFour("123") == "XXX")
    }

    @Test(arguments: [
        ("4761739001010010", CardNetwork.visa), ("5555555555554444", .mastercard), ("2223003122003222", .mastercard),
        ("378282246310005", .americanExpress), ("6011111111111117", .discover), ("6445644564456445", .discover),
        ("3530111333300000", .jcb), ("36227206271667", .dinersClub),
    ])
    func derivesTheNetworkFromTheBIN(_ pan: String, _ network: CardNetwork) {
        #expect(CardNetwork(accountNumber: pan) == network)
    }

    @Test func requestDescriptionsHideCredentialsAndTokens() throws {
        let request = try CnpOnlineRequest.parse(try Fixture.bytes("cnp-authorization-paypage.xml"))
        var dumped = ""
        dump(request, to: &dumped)
        #expect(!request.description.contains("not-a-real-pass"))
        #expect(!dumped.contains("not-a-real-pass"))
        let mercury = try MercuryPayRequest.parse(try Fixture.bytes("mercurypay-sale-by-recordno.json"), operation: .saleByRecordNo)
        #expect(!mercury.description.contains(mercury.recordNo))
        var mercuryDump = ""
        dump(mercury, to: &mercuryDump)
        #expect(!mercuryDump.contains(mercury.recordNo))
        var forwardedDump = ""
        dump(MercuryPayForwarding.upstreamRequest(mercury, card: try TestCards.applePay()), to: &forwardedDump)
        #expect(!forwardedDump.contains(TestCards.pan))
        let radial = try RadialCreditCardAuthRequest.parse(try Fixture.bytes("radial-dw-auth-request.xml"))
        var radialDump = ""
        dump(RadialForwarding.upstreamRequest(radial, card: try TestCards.applePay()), to: &radialDump)
        #expect(!radialDump.contains(TestCards.pan))
    }
}
