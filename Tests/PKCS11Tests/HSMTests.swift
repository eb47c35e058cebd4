import PaywardenTestTraits
import Testing

/// Every suite that opens a SoftHSM token nests here: `C_Initialize` and `C_Finalize` are
/// process-wide, so these suites run one at a time.
@Suite(.serialized, .releasesTestResources)
enum HSMTests {}
