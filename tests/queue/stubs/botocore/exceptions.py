"""botocore.exceptions' hierarchy for the classes the default retry policy names, with the
same qualified names (botocore 1.34), so that name matching sees what it would see."""


class BotoCoreError(Exception):
    fmt = "An unspecified error occurred"

    def __init__(self, **kwargs):
        super().__init__(self.fmt.format(**kwargs))
        self.kwargs = kwargs


class ConnectionError(BotoCoreError):
    fmt = "An HTTP Client failed to establish a connection: {error}"


class EndpointConnectionError(ConnectionError):
    fmt = 'Could not connect to the endpoint URL: "{endpoint_url}"'


class ConnectTimeoutError(ConnectionError):
    fmt = 'Connect timeout on endpoint URL: "{endpoint_url}"'


class HTTPClientError(BotoCoreError):
    fmt = "An HTTP Client raised an unhandled exception: {error}"


class ReadTimeoutError(HTTPClientError):
    fmt = 'Read timeout on endpoint URL: "{endpoint_url}"'


class ClientError(Exception):
    def __init__(self, error_response, operation_name):
        error = error_response.get("Error", {})
        super().__init__(
            f"An error occurred ({error.get('Code', 'Unknown')}) when calling the "
            f"{operation_name} operation: {error.get('Message', 'Unknown')}"
        )
        self.response = error_response
        self.operation_name = operation_name
