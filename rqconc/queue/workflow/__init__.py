"""Jobs that lead to other jobs: dependencies (`depends_on`), callbacks and webhooks
(follow-up jobs), flows (`Next` stages), groups and chords, and the not-yet-enqueued call
(`Signature`) they are built from. Each is stored by the step that enqueues or ends a job,
so a crash can neither drop nor duplicate a link."""
