The Delm valley had its wettest autumn in forty years.

Lake Ostra rose by two metres and flooded the lakeside path.

Walkers were asked to use the upper trail.

The water is expected to fall by spring.

@highlight

Wettest autumn in forty years in the Delm valley

@highlight

Lake Ostra rose two metres

@highlight

Walkers should use the upper trail

