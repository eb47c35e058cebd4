import Foundation
import Testing

@testable import ProcessorMessages

@Suite("ProcessorXML round trips and editing")
struct XMLRoundTripTests {
    @Test(arguments: [
        "cnp-authorization-paypage.xml", "litle-sale-applepay.xml", "cnp-register-token-applepay.xml",
        "cnp-authorization-response.xml", "litle-sale-response.xml", "radial-dw-auth-request.xml", "radial-auth-reply.xml",
    ])
    func reparsesToTheSameTree(_ fixture: String) throws {
        let original = try ProcessorXML.parse(try Fixture.bytes(fixture))
        let again = try ProcessorXML.parse(ProcessorXML.serialize(original))
        #expect(again == original)
    }

    @Test func keepsPrefixesDeclarationsUnknownElementsAndComments() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- leading -->
            <p:root xmlns:p="urn:p" xmlns:q="urn:q" q:attr="a&amp;b" xml:lang="en"><q:unknown>x &lt; y</q:unknown><p:empty/>\
            <![CDATA[a]]]]><![CDATA[>b]]></p:root>
            <!-- trailing -->
            """
        let document = try ProcessorXML.parse(text)
        let output = serialized(document)
        #expect(output.contains("<p:root xmlns:p=\"urn:p\" xmlns:q=\"urn:q\" q:attr=\"a&amp;b\" xml:lang=\"en\">"))
        #expect(output.contains("<q:unknown>x &lt; y</q:unknown><p:empty/>"))
        #expect(output.contains("standalone=\"yes\""))
        #expect(output.contains("<!-- leading -->") && output.contains("<!-- trailing -->"))
        #expect(try ProcessorXML.parse(output) == document)
        #expect(document.root.attribute("lang", namespaceURI: ProcessorXML.xmlNamespaceURI) == "en")
    }

    @Test func editsByLocalNameAndNamespaceWhateverThePrefix() throws {
        var root = try ProcessorXML.parse("<a:r xmlns:a=\"urn:a\"><a:x>1</a:x><a:y>2</a:y><b xmlns=\"urn:b\">3</b></a:r>").root
        #expect(root.firstChild(named: "x", namespaceURI: "urn:a")?.text == "1")
        #expect(root.firstChild(named: "b", namespaceURI: nil) == nil)
        var replacement = root.makeChild("z", text: "new")
        replacement.setAttribute("k", value: "v\"q\n")
        let replaced = root.replaceFirstChild(named: "x", namespaceURI: "urn:a", with: replacement)
        #expect(replaced)
        root.withFirstChild(named: "y", namespaceURI: "urn:a") { $0.setText("<two>") }
        let removed = root.removeChildren(named: "b", namespaceURI: "urn:b")
        #expect(removed == 1)
        root.insertChild(.element(ProcessorXML.Element(name: .init(namespaceURI: "urn:c", prefix: "c", localName: "added"))), at: 0)
        root.appendChild(ProcessorXML.Element(name: .init(localName: "plain")))
        let output = serialized(ProcessorXML.Document(root: root))
        #expect(
            output == "<a:r xmlns:a=\"urn:a\"><c:added xmlns:c=\"urn:c\"/><a:z k=\"v&quot;q&#xA;\">new</a:z>"
                + "<a:y>&lt;two&gt;</a:y><plain/></a:r>")
        let reparsed = try ProcessorXML.parse(output).root
        #expect(reparsed.firstChild(named: "z", namespaceURI: "urn:a")?.attribute("k") == "v\"q\n")
        #expect(reparsed.firstChild(named: "plain", namespaceURI: nil) != nil)
    }

    @Test func undeclaresTheDefaultNamespaceForUnqualifiedChildren() throws {
        var root = try ProcessorXML.parse("<r xmlns=\"urn:d\"/>").root
        root.appendChild(ProcessorXML.Element(name: .init(localName: "free")))
        let output = serialized(ProcessorXML.Document(root: root))
        #expect(output == "<r xmlns=\"urn:d\"><free xmlns=\"\"/></r>")
        #expect(try ProcessorXML.parse(output).root.childElements.first?.name.namespaceURI == nil)
    }

    @Test func serializerNeverEmitsWhatTheParserRefuses() throws {
        var root = ProcessorXML.Element(name: .init(localName: "r"))
        root.children = [.text("a\u{0}b]]>c\r"), .comment("x--y-"), .cdata("p]]>q")]
        root.setAttribute("n", namespaceURI: "urn:n", value: "\t")
        let reparsed = try ProcessorXML.parse(ProcessorXML.serialize(ProcessorXML.Document(root: root))).root
        #expect(reparsed.text == "a\u{FFFD}b]]>c\rp]]>q")
        #expect(reparsed.attribute("n", namespaceURI: "urn:n") == "\t")
    }
}
