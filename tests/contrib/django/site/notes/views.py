from django.http import JsonResponse

from notes.tasks import write_note


def enqueue_note(request):
    result = write_note.enqueue(request.GET["text"])
    return JsonResponse({"id": result.id, "status": result.status})


def note_result(request, result_id):
    result = write_note.get_result(result_id)
    value = result.return_value if result.is_finished else None
    return JsonResponse({"status": result.status, "value": value})
