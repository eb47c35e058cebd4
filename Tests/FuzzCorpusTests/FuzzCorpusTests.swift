import CShimFuzzing
import Foundation
import ProcessorMessages
import Testing

@testable import ApplePay

/// Every input of the committed libFuzzer corpus (Fuzz/corpus/TARGET) and every crash reproducer
/// (Fuzz/regressions/TARGET) goes through the same entry point its harness calls, in the normal
/// test run: a reproducer that traps again crashes the suite, one that hangs meets the time limit.
/// The corpus must also still reach the parsers' accepting paths, so a corpus that stopped
/// exercising them (after a format change, say) is noticed rather than replayed as noise.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    /// Each target's entry point, and whether an input gets through its first parser.
    static let targets: [String: (run: @Sendable ([UInt8]) -> Void, accepts: @Sendable ([UInt8]) -> Bool)] = [
        "token": (ApplePayFuzzing.token, { (try? PaymentToken(json: $0)) != nil }),
        "signature": (ApplePayFuzzing.signature, { (try? SignedData(ber: $0)) != nil }),
        "eprotect": (
            { if let token = ProcessorMessagesFuzzing.eProtectForm($0) { ApplePayFuzzing.token(token) } },
            { ProcessorMessagesFuzzing.eProtectForm($0) != nil }
        ),
        "processor-xml": (ProcessorMessagesFuzzing.run, { (try? ProcessorXML.parse($0)) != nil }),
        "key-file": ({ _ = pw_fuzz_key_file($0, $0.count) }, { pw_fuzz_key_file($0, $0.count) > 0 }),
    ]

    static func inputs(_ folder: String, _ target: String) -> [URL] {
        let directory = fuzz.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
    }

    /// A folder named for no target (a typo such as `processor_xml`) would never be replayed.
    @Test func everyFolderIsATarget() throws {
        for folder in ["corpus", "regressions"] {
            let path = Self.fuzz.appendingPathComponent(folder).path
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            for name in names where !name.hasPrefix(".") {
                #expect(Self.targets[name] != nil, "Fuzz/\(folder)/\(name) is not a fuzz target (\(Self.targets.keys.sorted()))")
            }
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: targets.keys.sorted())
    func corpusAndReproducersReplay(target: String) throws {
        let entry = try #require(Self.targets[target])
        let corpus = Self.inputs("corpus", target)
        let reproducers = Self.inputs("regressions", target)
        // The minimised merge keeps what adds coverage: hundreds of inputs for the Swift parsers, a
        // couple for the shim, whose calls into OpenSSL are not instrumented.
        #expect(!corpus.isEmpty, "Fuzz/corpus/\(target) is empty; regenerate it with scripts/fuzz.sh --update-corpus")
        let clock = ContinuousClock()
        var accepted = 0
        for file in corpus + reproducers {
            let bytes = Array(try Data(contentsOf: file))
            let elapsed = clock.measure { entry.run(bytes) }
            // Generous for a debug build on a loaded machine; libFuzzer's own limit is 10 s.
            #expect(elapsed < .seconds(3), "\(target)/\(file.lastPathComponent) took \(elapsed)")
            if entry.accepts(bytes) { accepted += 1 }
        }
        // When the corpus was made, 21% (processor-xml) to 89% (token) of the inputs got past the
        // first parser; under 10% means the corpus no longer fits the format.
        #expect(accepted * 10 >= corpus.count, "\(accepted) of \(corpus.count) inputs of Fuzz/corpus/\(target) get past its first parser")
    }
}
