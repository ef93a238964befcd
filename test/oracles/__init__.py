"""Independent references the tests hold the controller to; the package never imports them."""
