import Foundation

/// Runs `../shared/tools/hsm-bench` (built by `make bench`) against a token of its own in the
/// same SoftHSM store, and reads its operations per wall second.
struct RawHSMBench {
    let executable: String
    let label: String
    let pin: String

    /// `hsm_bench bench NAME SECONDS THREADS`; nil when the line cannot be read.
    func rate(_ name: String, seconds: Double, threads: Int) throws -> Double? {
        let output = try run(["-l", label, "-p", pin, "bench", name, String(seconds), String(threads)])
        // bench=ecdh  threads=1 ops=... wall=5.00s =>   6900 ops/s wall | ...
        guard let range = output.range(of: #"=>\s*([0-9.]+) ops/s wall"#, options: .regularExpression) else { return nil }
        let figure = output[range].split(whereSeparator: { $0 == " " }).dropFirst().first
        return figure.flatMap { Double($0) }
    }

    func createKeys() throws {
        _ = try run(["-l", label, "-p", pin, "keys"])
    }

    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("hsm_bench \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
