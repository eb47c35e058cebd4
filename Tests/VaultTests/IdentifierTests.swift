import PaywardenPrimitives
import Testing
import Vault

/// MOD 10+1 and the OmniToken formats.
struct IdentifierTests {
    @Test func worldpaysCertificationTokensPassTheCheckAndCardNumbersFailIt() {
        for token in ["1111000276870123", "1712000118270196", "1711000103054242", "1111000194360009", "5760311187832973287"] {
            #expect(Luhn.isModTenPlusOne(token), "\(token)")
        }
        for card in ["4457119922390123", "4111111111111111", "5555555555554444", "378282246310005", "6011111111111117"] {
            #expect(Luhn.isValid(card) && !Luhn.isModTenPlusOne(card), "\(card)")
            #expect(!CardVault.isWellFormedToken(card))
        }
        #expect(!Luhn.isModTenPlusOne("") && !Luhn.isModTenPlusOne("12a4") && !Luhn.isModTenPlusOne("１２"))
    }

    @Test func registrationIDsAreNineteenDigitsModTenPlusOneAndDistinct() {
        let ids = (0..<2000).map { _ in RegistrationID.generate().value }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.count == 19 && RegistrationID.isWellFormed(id) && !Luhn.isValid(id))
        }
        // Every first digit appears: the digits are not biased toward a prefix.
        #expect(Set(ids.map(\.first)).count == 10)
        let shown = "\(RegistrationID.generate())"
        #expect(!shown.contains { $0.isNumber })
    }

    @Test func formatsRefuseWhatIsNotAnAccountNumber() {
        for bad in ["411111111111", "41111111111111111111", "4111a11111111111", ""] {
            #expect(HighValueTokenFormat.t.newToken(for: bad) == nil && HighValueTokenFormat.d.newToken(for: bad) == nil)
        }
    }

    @Test(arguments: 13...19)
    func formatsTAndDKeepFirstSixAndLastFourForEveryLength(_ length: Int) {
        // A real account number passes Luhn; one that did not could be a token's own shape, and a
        // token drawn at random would then equal it once in about 10,000.
        let body = String("4111111111111111111".prefix(length - 1))
        guard let pan = (0...9).map({ body + String($0) }).first(where: { Luhn.isValid($0) }) else { return }
        for format in HighValueTokenFormat.allCases {
            for _ in 0..<50 {
                guard let token = format.newToken(for: pan) else {
                    Issue.record("no token for \(length) digits")
                    return
                }
                #expect(token.count == (format == .t ? length : max(16, length)), "\(format) \(length)")
                #expect(token.hasPrefix(pan.prefix(6)) && token.hasSuffix(pan.suffix(4)))
                #expect(Luhn.isModTenPlusOne(token) && !Luhn.isValid(token) && token != pan)
            }
        }
    }
}

/// The vault's network names come from the one BIN table the processor messages read too.
struct CardNetworkTests {
    @Test(arguments: [
        ("411111", CardNetworkCode?.some(.visa)), ("555555", .mastercard), ("222300", .mastercard), ("272099", .mastercard),
        ("272100", nil), ("378282", .americanExpress), ("601111", .discover), ("650000", .discover),
        ("622126", .discover), ("353011", .jcb), ("362272", .dinersClub), ("380000", .dinersClub), ("390000", .dinersClub),
        ("305000", .dinersClub), ("999999", nil), ("41", nil),
    ])
    func binTable(_ bin: String, _ network: CardNetworkCode?) {
        #expect(CardNetwork(bin: bin).code == network, "\(bin)")
        #expect(CardNetwork(bin: bin).rawValue == network?.rawValue ?? "", "\(bin)")
    }
}
