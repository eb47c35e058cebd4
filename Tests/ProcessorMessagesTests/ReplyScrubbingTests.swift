import Foundation
import Testing

@testable import ProcessorMessages

/// A compromised upstream echoing the account number and cryptogram the relay sent it (issue 25,
/// item 5): in CDATA, split by comments, in comments outside the root, in attributes, nested,
/// with separators, or where nothing can be masked. The reply rewriters of all three formats must
/// give the client neither, in any form the parsers yield: what can be masked is masked and the
/// reply kept; what cannot (a name, a JSON number, a number split across fields) refuses the reply.
@Suite("Reply scrubbing against an echoing upstream")
struct ReplyScrubbingTests {
    static let pan = TestCards.pan
    static let cryptogram = TestCards.cryptogram
    static let token = "4761730000100018"

    /// An echo placed in an XML reply: elements inside the transaction's reply, comments around the root.
    struct XMLEcho: Sendable, CustomTestStringConvertible {
        let label: String
        var elements = ""
        var prolog = ""
        var epilog = ""
        /// False when the relay must refuse the reply rather than mask.
        var maskable = true
        var testDescription: String { label }
    }

    static let pan6 = String(pan.prefix(6))
    static let panRest = String(pan.dropFirst(6))
    static let cavvHead = String(cryptogram.prefix(10))
    static let cavvRest = String(cryptogram.dropFirst(10))
    static let fullwidthPAN = String(String.UnicodeScalarView(pan.unicodeScalars.map { Unicode.Scalar($0.value - 0x30 + 0xFF10)! }))

    static let xmlEchoes: [XMLEcho] = [
        XMLEcho(label: "CDATA", elements: "<Note><![CDATA[card \(pan) cavv \(cryptogram)]]></Note>"),
        XMLEcho(label: "text then CDATA", elements: "<Note>\(pan6)<![CDATA[\(panRest)]]> \(cavvHead)<![CDATA[\(cavvRest)]]></Note>"),
        XMLEcho(label: "empty comment inside the number", elements: "<Note>\(pan6)<!---->\(panRest) \(cavvHead)<!-- -->\(cavvRest)</Note>"),
        XMLEcho(label: "comment inside an element", elements: "<Note>ok<!-- card \(pan) cavv \(cryptogram) --></Note>"),
        XMLEcho(label: "comment before the root", prolog: "<!-- card \(pan) -->"),
        XMLEcho(label: "comment after the root", epilog: "\n<!-- card \(pan) cavv \(cryptogram) -->\n"),
        XMLEcho(label: "attribute", elements: #"<Note card="\#(pan)" cavv="\#(cryptogram)">x</Note>"#),
        XMLEcho(label: "attribute with separators", elements: #"<Note card="\#(pan6)-\#(panRest)"/>"#),
        XMLEcho(label: "nested elements", elements: "<Note><Detail><Line>card \(pan)</Line><Line>\(cryptogram)</Line></Detail></Note>"),
        XMLEcho(label: "child element inside the number", elements: "<Note>\(pan6)<Break/>\(panRest)</Note>"),
        XMLEcho(label: "groups of four", elements: "<Note>card 4761 7390 0101 0010</Note>"),
        XMLEcho(label: "dashes and dots", elements: "<Note>4761-7390-0101-0010 / 4761.7390.0101.0010</Note>"),
        XMLEcho(label: "cryptogram broken by a line feed", elements: "<Note>\(cavvHead)\n\(cavvRest)</Note>"),
        XMLEcho(label: "character references", elements: "<Note>&#52;&#x37;61739001010010</Note>"),
        XMLEcho(label: "fullwidth digits", elements: "<Note>\(fullwidthPAN)</Note>"),
        XMLEcho(label: "split across elements", elements: "<Note>47617390</Note><Note>01010010</Note>", maskable: false),
        XMLEcho(label: "cryptogram split across elements", elements: "<Note>\(cavvHead)</Note><Note>\(cavvRest)</Note>", maskable: false),
        XMLEcho(label: "element name", elements: "<Card\(pan)/>", maskable: false),
        XMLEcho(label: "attribute name", elements: #"<Note c\#(pan)="1"/>"#, maskable: false),
        XMLEcho(label: "namespace URI", elements: #"<x:Note xmlns:x="urn:card:\#(pan)"/>"#, maskable: false),
    ]

    // MARK: cnpAPI

    static func cnpReply(_ echo: XMLEcho) -> [UInt8] {
        Array(
            (#"<?xml version="1.0" encoding="UTF-8"?>\#(echo.prolog)<cnpOnlineResponse version="12.10" "#
                + #"xmlns="http://www.vantivcnp.com/schema" response="0" message="Valid Format"><authorizationResponse id="a">"#
                + "<cnpTxnId>1</cnpTxnId><orderId>o</orderId><response>000</response><message>Approved</message>"
                + "<accountInformation><type>VI</type><number>\(pan)</number></accountInformation>\(echo.elements)"
                + "</authorizationResponse></cnpOnlineResponse>\(echo.epilog)").utf8)
    }

    @Test(arguments: xmlEchoes)
    func cnpReplyGivesBackNeitherTheAccountNumberNorTheCryptogram(_ echo: XMLEcho) throws {
        let token = CnpResponseRewriter.TokenResult(token: Self.token, code: .registered, type: "VI", bin: "476173")
        let card = try TestCards.applePay()
        let result = Result { () throws(ProcessorMessageError) in
            try CnpResponseRewriter.clientResponse(Self.cnpReply(echo), token: token, forwarded: card)
        }
        Self.check(result, echo)
    }

    @Test func masksInPlaceKeepingTheFirstSixAndLastFourAndDropsTheCryptogram() throws {
        let echo = XMLEcho(
            label: "in place",
            elements: "<Note>card 4761 7390 0101 0010.</Note><Note>\(Self.pan6)<![CDATA[\(Self.panRest)]]> ok</Note>"
                + #"<Note card="x\#(Self.pan)y">cavv \#(Self.cavvHead)<!---->\#(Self.cavvRest) end</Note>"#)
        let document = try CnpResponseRewriter.clientResponse(
            Self.cnpReply(echo), token: nil, forwarded: try TestCards.applePay())
        let output = serialized(document)
        #expect(output.contains("<Note>card 4761 73** **** 0010.</Note>"), "\(output)")
        #expect(output.contains("<Note>476173<![CDATA[******0010]]> ok</Note>"), "\(output)")
        #expect(output.contains(#"<Note card="x476173******0010y">cavv  end</Note>"#), "\(output)")
    }

    @Test func cnpPassthroughStillMasksAccountNumbersWithoutAForwardedCard() throws {
        let echo = XMLEcho(label: "passthrough", elements: "<Note>ok<!-- 4761739001010010 --></Note>")
        let document = try CnpResponseRewriter.clientResponse(Self.cnpReply(echo), token: nil, forwarded: nil)
        let output = serialized(document)
        #expect(output.contains("<number>476173******0010</number>") && !output.contains("<!--"), "\(output)")
        #expect(!Self.digits(output).contains(Self.pan))
    }

    // MARK: Radial

    static func radialReply(_ echo: XMLEcho) -> [UInt8] {
        Array(
            (#"<?xml version="1.0" encoding="UTF-8"?>\#(echo.prolog)"#
                + #"<CreditCardAuthReply xmlns="http://api.gsicommerce.com/schema/checkout/1.0"><PaymentContext>"#
                + #"<OrderId>ORDER-0005</OrderId><PaymentAccountUniqueId isToken="false">\#(pan)</PaymentAccountUniqueId>"#
                + "</PaymentContext><ResponseCode>APPROVED</ResponseCode><AuthorizationResponseCode>00</AuthorizationResponseCode>"
                + "<TenderType>VC</TenderType><Extension>\(echo.elements)</Extension></CreditCardAuthReply>\(echo.epilog)").utf8)
    }

    @Test(arguments: xmlEchoes)
    func radialReplyGivesBackNeitherTheAccountNumberNorTheCryptogram(_ echo: XMLEcho) throws {
        let card = try TestCards.applePay()
        let result = Result { () throws(ProcessorMessageError) in
            try RadialReplyRewriter.clientReply(Self.radialReply(echo), token: Self.token, forwarded: card)
        }
        Self.check(result, echo)
        if case .success(let document) = result {
            let account = document.root.firstChild(named: "PaymentContext", namespaceURI: RadialTests.ns)?
                .firstChild(named: "PaymentAccountUniqueId", namespaceURI: RadialTests.ns)
            #expect(account?.text == Self.token && account?.attribute("isToken") == "true")
        }
    }

    @Test func anXMLDeclarationCarryingTheNumberIsRefused() {
        let body = Array(Self.radialReply(XMLEcho(label: "")).dropFirst(#"<?xml version="1.0""#.utf8.count))
        let hostile = Array(#"<?xml version="1.\#(Self.pan)""#.utf8) + body
        let error = messageError {
            _ = try RadialReplyRewriter.clientReply(hostile, token: Self.token, forwarded: try TestCards.applePay())
        }
        #expect(error?.code.rawValue == "echoed_card_data", "\(String(describing: error))")
    }

    @Test func processingInstructionsAndDTDsAreRefusedByTheParser() {
        for (prolog, elements) in [
            ("<?note \(Self.pan)?>", ""), ("", "<?note \(Self.pan)?>"), ("<!DOCTYPE x [<!ENTITY n \"\(Self.pan)\">]>", ""),
        ] {
            let echo = XMLEcho(label: "", elements: elements, prolog: prolog)
            let error = messageError {
                _ = try RadialReplyRewriter.clientReply(Self.radialReply(echo), token: Self.token, forwarded: try TestCards.applePay())
            }
            #expect(error?.code == .malformedXML, "\(String(describing: error))")
            #expect(error.map { !$0.description.contains(Self.pan) } == true)
        }
    }

    // MARK: MercuryPay

    struct JSONEcho: Sendable, CustomTestStringConvertible {
        let label: String
        /// Members added to the approval, as JSON text after a comma.
        let members: String
        var maskable = true
        var testDescription: String { label }
    }

    static let jsonEchoes: [JSONEcho] = [
        JSONEcho(label: "top-level field", members: #""Memo":"card \#(pan) cavv \#(cryptogram)""#),
        JSONEcho(
            label: "nested object and array",
            members: #""Detail":{"Lines":["card \#(pan)",{"Cavv":"\#(cryptogram)","AcctNo":"\#(pan)"}]}"#),
        JSONEcho(label: "groups of four", members: #""Memo":"card 4761 7390 0101 0010""#),
        JSONEcho(label: "dashes", members: #""Detail":{"Card":"4761-7390-0101-0010"}"#),
        JSONEcho(label: "cryptogram broken by a line feed", members: #""Note":"\#(cavvHead)\n\#(cavvRest)""#),
        JSONEcho(label: "unicode escapes", members: #""Memo":"\u0034\u0037\#(pan.dropFirst(2))""#),
        JSONEcho(label: "split across fields", members: #""NoteA":"47617390","NoteB":"01010010""#, maskable: false),
        JSONEcho(label: "member name", members: #""\#(pan)":"card""#, maskable: false),
        JSONEcho(label: "number", members: #""Reference":\#(pan)"#, maskable: false),
        JSONEcho(label: "nested number", members: #""Detail":[1,\#(pan)]"#, maskable: false),
    ]

    static func mercuryPayReply(_ echo: JSONEcho) -> [UInt8] {
        Array(
            (#"{"ResponseOrigin":"Processor","DSIXReturnCode":"000000","CmdStatus":"Approved","TextResponse":"AP","#
                + #""AcctNo":"\#(pan)","ExpDate":"1230","RecordNo":"UPSTREAM-OWN","#
                + echo.members + "}").utf8)
    }

    @Test(arguments: jsonEchoes)
    func mercuryPayReplyGivesBackNeitherTheAccountNumberNorTheCryptogram(_ echo: JSONEcho) throws {
        let card = try TestCards.applePay()
        let result = Result { () throws(ProcessorMessageError) in
            try MercuryPayResponseRewriter.clientResponse(
                Self.mercuryPayReply(echo), token: Self.token, forwarded: card)
        }
        switch result {
        case .success(let body):
            let output = String(decoding: body.serialized(), as: UTF8.self)
            #expect(echo.maskable, "the reply was kept: \(output)")
            Self.expectClean(output)
            #expect(body["RecordNo"]?.stringValue == Self.token && body["AcctNo"]?.stringValue == "XXXXXXXXXXXX0010")
        case .failure(let error):
            #expect(!echo.maskable, "refused: \(error)")
            #expect(error.code.rawValue == "echoed_card_data", "\(error)")
            #expect(!error.description.contains(Self.pan) && !error.description.contains(Self.cryptogram))
        }
    }

    /// The cryptogram nested in itself, each removal exposing the next (`c[:k]` … `c` … `c[k:]`):
    /// a scrubber that looked until none was left would pass over the value once per level. A
    /// few passes are made; what they leave is found by the check on the whole reply, which refuses it.
    @Test func aCryptogramNestedInItselfIsRefusedWithoutAPassPerLevel() throws {
        let card = try TestCards.applePay()
        var nested = Self.cryptogram
        for _ in 0..<500 { nested = String(Self.cryptogram.prefix(10)) + nested + String(Self.cryptogram.dropFirst(10)) }
        let start = ContinuousClock.now
        let result = Result { () throws(ProcessorMessageError) in
            try MercuryPayResponseRewriter.clientResponse(
                Self.mercuryPayReply(JSONEcho(label: "nested", members: #""Note":"\#(nested)""#)), token: Self.token, forwarded: card)
        }
        let elapsed = ContinuousClock.now - start
        guard case .failure(let error) = result else {
            Issue.record("the nested reply was kept: the scrubber made a pass per level")
            return
        }
        #expect(error.code.rawValue == "echoed_card_data", "\(error)")
        #expect(elapsed < .seconds(2), "\(elapsed) for a 14 KB value")
    }

    // MARK: Checks

    /// A maskable echo: the reply is kept and carries neither; otherwise the reply is refused.
    static func check(_ result: Result<ProcessorXML.Document, ProcessorMessageError>, _ echo: XMLEcho) {
        switch result {
        case .success(let document):
            let output = serialized(document)
            #expect(echo.maskable, "the reply was kept: \(output)")
            expectClean(output)
            #expect(!output.contains("<!--"), "comments are dropped: \(output)")
        case .failure(let error):
            #expect(!echo.maskable, "refused: \(error)")
            #expect(error.code.rawValue == "echoed_card_data", "\(error)")
            #expect(!error.description.contains(pan) && !error.description.contains(cryptogram))
        }
    }

    /// The account number in no run of digits (whatever separates them, Unicode digits as ASCII),
    /// the cryptogram in no text with whitespace removed; the BIN and last four may stay.
    static func expectClean(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!digits(output).contains(pan), "the account number came back: \(output)", sourceLocation: sourceLocation)
        let compact = String(String.UnicodeScalarView(output.unicodeScalars.filter { !$0.properties.isWhitespace }))
        #expect(!compact.contains(cryptogram), "the cryptogram came back: \(output)", sourceLocation: sourceLocation)
        #expect(!compact.contains(cavvRest), "part of the cryptogram came back: \(output)", sourceLocation: sourceLocation)
    }

    /// Every decimal digit of `text`, in order, as ASCII.
    static func digits(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars where scalar.properties.numericType == .decimal {
            if let value = scalar.properties.numericValue { result += String(Int(value)) }
        }
        return result
    }
}
