import Logging
import PaywardenServices
import Testing

@testable import PaywardenServer

/// Until the first check, decryptions go to the HSM (it opened logged in) but the service is not
/// ready; after that, one record answers both.
@Suite struct HSMReadinessTests {
    @Test func decryptionsAreAdmittedBeforeTheFirstCheckButTheServiceIsNotReady() {
        let readiness = HSMReadiness(metrics: ServerMetrics(), logger: Logger(label: "test"))
        #expect(readiness.admitsDecryptions)
        #expect(!readiness.isReady)

        readiness.update(ready: true, reason: nil)
        #expect(readiness.admitsDecryptions && readiness.isReady)

        readiness.update(ready: false, reason: "the HSM did not answer")
        #expect(!readiness.admitsDecryptions && !readiness.isReady)

        readiness.update(ready: true, reason: nil)
        #expect(readiness.admitsDecryptions && readiness.isReady)
    }
}
