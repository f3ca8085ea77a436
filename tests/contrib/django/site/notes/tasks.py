"""The tasks the tests enqueue: each writes a row (or fails), as an application's would."""

try:
    from django.tasks import task
except ImportError:  # Django before 6.0: the backport
    from django_tasks import task

from notes.models import Note


@task
def write_note(text):
    note = Note.objects.create(text=text)
    return {"id": note.id, "text": text}


@task
def fail(message):
    raise ValueError(message)


@task
async def write_note_async(text):
    note = await Note.objects.acreate(text=text)
    return {"id": note.id, "text": text}


@task(takes_context=True)
def report_context(context, label):
    result = context.task_result
    return {
        "attempt": context.attempt,
        "id": result.id,
        "status": str(result.status),
        "label": label,
        "worker_ids": result.worker_ids,
    }
