import Foundation

/// The source of a usage-information package (Apple: "create a self-contained package"):
/// `usageInformation.json`, optional PNG images, optional `.lproj` localizations, at most 5 MB
/// in all, zipped. The zip is what gets sealed for the device.
public struct UsageInformationPackage: Sendable {
    /// Apple's limit on the package's source.
    public static let maximumSourceBytes = 5 * 1024 * 1024

    /// The archive (stored zip) of `usageInformation.json` first, then the files in path order.
    public let zip: [UInt8]

    /// Builds the package from a document ``UsageInformationValidator`` passed and `files`
    /// (path → bytes): images as `NAME.png`, `NAME@2x.png`, `NAME@3x.png`, at the top or inside a
    /// `LANGUAGE[-REGION].lproj/` directory, and `LANGUAGE[-REGION].lproj/usageInformation.strings`.
    public init(usageInformation: [UInt8], files: [String: [UInt8]] = [:]) throws(UsageInformationError) {
        var total = usageInformation.count
        for (path, bytes) in files {
            guard Self.isAllowedPath(path) else {
                throw UsageInformationError(
                    "files[\(path.prefix(80))]",
                    "must be NAME.png, NAME@2x.png or NAME@3x.png, at the top or in a LANGUAGE[-REGION].lproj directory, or "
                        + "LANGUAGE[-REGION].lproj/usageInformation.strings")
            }
            if path.hasSuffix(".png") && !bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
                throw UsageInformationError("files[\(path)]", "is not a PNG image")
            }
            total += bytes.count
        }
        guard total <= Self.maximumSourceBytes else {
            throw UsageInformationError("", "the package's source is \(total) bytes; Apple's limit is 5 MB")
        }
        zip = StoredZip.archive(
            [("usageInformation.json", usageInformation)] + files.keys.sorted().map { ($0, files[$0]!) })
    }

    static func isAllowedPath(_ path: String) -> Bool {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let file: String
        switch parts.count {
        case 1: file = parts[0]
        case 2:
            guard parts[0].range(of: #"^[a-z]{2,3}(-[A-Za-z0-9]{2,4})?\.lproj$"#, options: .regularExpression) != nil else { return false }
            if parts[1] == "usageInformation.strings" { return true }
            file = parts[1]
        default: return false
        }
        return file.range(of: #"^[A-Za-z0-9_-]{1,64}(@[23]x)?\.png$"#, options: .regularExpression) != nil
    }
}
