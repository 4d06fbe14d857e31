"""Putting images into the catalog of a test cloud through its API
(POST /v2/bitstreams, then PUT .../data), as an operator does."""

import webob

ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'admin'}


def upload(cloud, data, **metadata):
    """Create and upload an image; its uuid once active."""
    status, image = cloud.call('POST', '/v2/bitstreams',
                               dict({'name': 'image'}, **metadata), ADMIN)
    assert status == 201, image
    request = webob.Request.blank(
        '/v2/bitstreams/%s/data' % image['uuid'], method='PUT',
        headers=ADMIN, body=data,
        content_type='application/octet-stream')
    response = request.get_response(cloud.app)
    assert response.status_int == 200, response.text
    assert response.json['status'] == 'active', response.json
    return image['uuid']


def firmware(cloud, text, vendor='0x8086', **metadata):
    """A fake-driver firmware image (drivers/fake.py): ``text`` lines."""
    return upload(cloud, text.encode(), kind='firmware', vendor=vendor,
                  **metadata)
