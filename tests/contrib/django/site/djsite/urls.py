from django.urls import path
from notes import views

urlpatterns = [
    path("notes/enqueue", views.enqueue_note),
    path("notes/result/<str:result_id>", views.note_result),
]
